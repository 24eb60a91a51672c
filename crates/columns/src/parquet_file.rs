//! The Parquet file: one required (or, for floats, optional) leaf column per table column,
//! written with the `parquet` crate's low-level column writers.

use crate::{ColumnsError, Table, Values};
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

/// Rows per row group.
const GROUP: usize = 1 << 20;

pub(crate) fn write(t: &Table, path: &Path) -> Result<(), ColumnsError> {
    let pq = |source| ColumnsError::Parquet {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::create(path).map_err(|source| ColumnsError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("multios {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut w = SerializedFileWriter::new(file, schema(t).map_err(pq)?, Arc::new(props)).map_err(pq)?;
    let mut start = 0;
    loop {
        let end = (start + GROUP).min(t.rows());
        let mut g = w.next_row_group().map_err(pq)?;
        for c in t.columns() {
            let mut col = g.next_column().map_err(pq)?.ok_or_else(|| {
                pq(parquet::errors::ParquetError::General(
                    "schema ended early".into(),
                ))
            })?;
            match &c.values {
                Values::Int(v) => col.typed::<Int64Type>().write_batch(&v[start..end], None, None),
                Values::Bool(v) => col.typed::<BoolType>().write_batch(&v[start..end], None, None),
                Values::Text(v) => {
                    let b: Vec<ByteArray> = v[start..end]
                        .iter()
                        .map(|s| ByteArray::from(s.as_str()))
                        .collect();
                    col.typed::<ByteArrayType>().write_batch(&b, None, None)
                }
                Values::Float(v) => {
                    let part = &v[start..end];
                    let present: Vec<f64> = part.iter().flatten().copied().collect();
                    let def: Vec<i16> = part.iter().map(|x| i16::from(x.is_some())).collect();
                    col.typed::<DoubleType>().write_batch(&present, Some(&def), None)
                }
            }
            .map_err(pq)?;
            col.close().map_err(pq)?;
        }
        g.close().map_err(pq)?;
        start = end;
        if start >= t.rows() {
            break;
        }
    }
    w.close().map_err(pq)?;
    Ok(())
}

fn schema(t: &Table) -> parquet::errors::Result<Arc<Type>> {
    let fields = t
        .columns()
        .iter()
        .map(|c| {
            let (physical, logical, rep) = match c.values {
                Values::Int(_) => (Physical::INT64, None, Repetition::REQUIRED),
                Values::Float(_) => (Physical::DOUBLE, None, Repetition::OPTIONAL),
                Values::Text(_) => (
                    Physical::BYTE_ARRAY,
                    Some(LogicalType::String),
                    Repetition::REQUIRED,
                ),
                Values::Bool(_) => (Physical::BOOLEAN, None, Repetition::REQUIRED),
            };
            Type::primitive_type_builder(&c.name, physical)
                .with_repetition(rep)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<parquet::errors::Result<Vec<_>>>()?;
    Ok(Arc::new(
        Type::group_type_builder("multios").with_fields(fields).build()?,
    ))
}

#[cfg(test)]
mod tests {
    use crate::{Table, Values};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn issue_18_parquet_holds_every_row_and_type() {
        let dir = std::env::temp_dir().join(format!("multios-columns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("t.parquet");
        let n = 2500;
        let t = Table::new()
            .with("i", Values::Int((0..n).collect()))
            .with(
                "x",
                Values::Float((0..n).map(|i| (i % 7 != 0).then_some(i as f64 / 3.0)).collect()),
            )
            .with("s", Values::Text((0..n).map(|i| format!("row {i}")).collect()))
            .with("b", Values::Bool((0..n).map(|i| i % 2 == 0).collect()));
        t.write_parquet(&p).expect("write");
        let r = SerializedFileReader::new(std::fs::File::open(&p).expect("open")).expect("reader");
        let md = r.metadata().file_metadata();
        assert_eq!(md.num_rows(), n);
        let names: Vec<&str> = md.schema_descr().columns().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["i", "x", "s", "b"]);
        let rows: Vec<_> = r
            .get_row_iter(None)
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(rows.len(), n as usize);
        assert_eq!(
            rows[8].to_string(),
            "{i: 8, x: 2.6666666666666665, s: \"row 8\", b: true}"
        );
        assert_eq!(rows[7].to_string(), "{i: 7, x: null, s: \"row 7\", b: false}");
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
