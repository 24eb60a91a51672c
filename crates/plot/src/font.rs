//! Finds a TrueType font on the machine and registers it as "sans-serif" for the
//! drawing library, once per process. Fonts are not bundled: Debian's
//! `fonts-dejavu-core` (or `MULTIOS_PLOT_FONT`) provides one.

use std::path::PathBuf;
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

use crate::error::PlotError;

/// Environment variable naming a font file to use instead of the search list.
pub const FONT_ENV: &str = "MULTIOS_PLOT_FONT";

/// The family name figures use for all text.
pub(crate) const FAMILY: &str = "sans-serif";

/// Where common distributions keep a plain sans-serif font.
const CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// The font file registered for this process, or why none could be.
static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Registers the font on first use; later calls return the same outcome.
pub fn ensure() -> Result<PathBuf, PlotError> {
    FONT.get_or_init(register)
        .clone()
        .map_err(|message| PlotError::Font { message })
}

fn register() -> Result<PathBuf, String> {
    let wanted: Vec<PathBuf> = match std::env::var_os(FONT_ENV) {
        Some(p) if !p.is_empty() => vec![PathBuf::from(p)],
        _ => CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    for path in &wanted {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(format!(
                    "{}: {e}; set {FONT_ENV} to a readable font file",
                    path.display()
                ))
            }
        };
        // The library keeps a reference for the life of the process; leaking one font
        // file (a few hundred KiB, once) is what its API asks for.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font(FAMILY, FontStyle::Normal, bytes).map_err(|_| {
            format!(
                "{}: not a TrueType/OpenType font; set {FONT_ENV} to a .ttf or .otf file",
                path.display()
            )
        })?;
        return Ok(path.clone());
    }
    let tried: Vec<String> = wanted.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "no TrueType font for plot text (tried {}); install the Debian package fonts-dejavu-core or set \
         {FONT_ENV}=/path/to/font.ttf",
        tried.join(", ")
    ))
}
