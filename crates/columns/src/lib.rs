//! Results with many rows — every system call of `profile --trace`, every noise sample — as a
//! [`Table`] of typed columns, written as CSV ([`Table::to_csv`]) or Parquet
//! ([`Table::write_parquet`]) from the same values, so both files hold the same rows.
//!
//! Types map as pandas reads them back: [`Values::Int`] is Parquet INT64 (pandas int64), a
//! [`Values::Float`] DOUBLE (float64; `None` is a null, an empty CSV cell, NaN in pandas),
//! [`Values::Text`] a UTF-8 BYTE_ARRAY (object), [`Values::Bool`] BOOLEAN (bool). In the CSV a
//! float is written so that it reads back as a float with the same bits (`2.0`, `1e-7`: never
//! `2`, which pandas would take for an integer column).

mod csv;
mod parquet_file;

use std::path::Path;

/// An error writing a table.
#[derive(Debug, thiserror::Error)]
pub enum ColumnsError {
    #[error("column '{name}' has {got} rows, the table's first column {want}: every column needs one value per row")]
    Ragged { name: String, got: usize, want: usize },
    #[error("cannot write {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("cannot write Parquet file {path}: {source}")]
    Parquet {
        path: String,
        source: parquet::errors::ParquetError,
    },
}

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Int(Vec<i64>),
    Float(Vec<Option<f64>>),
    Text(Vec<String>),
    Bool(Vec<bool>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Text(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub values: Values,
}

/// Columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    columns: Vec<Column>,
}

/// Which file a path asks for, by its extension: `.parquet`, `.csv`, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Parquet,
    Csv,
    Other,
}

impl FileKind {
    pub fn of(path: &Path) -> FileKind {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
        {
            Some(e) if e == "parquet" || e == "pq" => FileKind::Parquet,
            Some(e) if e == "csv" => FileKind::Csv,
            _ => FileKind::Other,
        }
    }
}

impl Table {
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds a column (builder style).
    pub fn with(mut self, name: &str, values: Values) -> Table {
        self.columns.push(Column {
            name: name.to_string(),
            values,
        });
        self
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Rows: the first column's length.
    pub fn rows(&self) -> usize {
        self.columns.first().map(|c| c.values.len()).unwrap_or(0)
    }

    fn check(&self) -> Result<(), ColumnsError> {
        let want = self.rows();
        match self.columns.iter().find(|c| c.values.len() != want) {
            Some(c) => Err(ColumnsError::Ragged {
                name: c.name.clone(),
                got: c.values.len(),
                want,
            }),
            None => Ok(()),
        }
    }

    /// The table as CSV text: a header line, then one line per row.
    pub fn to_csv(&self) -> Result<String, ColumnsError> {
        self.check()?;
        Ok(csv::write(self))
    }

    /// Writes the table as Parquet to `path` (one row group per million rows, Snappy pages).
    pub fn write_parquet(&self, path: &Path) -> Result<(), ColumnsError> {
        self.check()?;
        parquet_file::write(self, path)
    }

    /// Writes the table to `path` as its extension asks: Parquet for `.parquet`, else CSV.
    pub fn save(&self, path: &Path) -> Result<(), ColumnsError> {
        match FileKind::of(path) {
            FileKind::Parquet => self.write_parquet(path),
            _ => std::fs::write(path, self.to_csv()?).map_err(|source| ColumnsError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }
}
