//! A backend wrapper for SVG output when no font is available: an SVG names its font
//! family and the viewer draws the glyphs, so only the *layout* needs text sizes. This
//! wrapper asks the real backend first and, if the font is missing, estimates the size
//! from the character count. Everything else is passed through unchanged.

use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// Average glyph advance of a sans-serif font, as a fraction of the font size.
const ADVANCE: f64 = 0.55;

/// Wraps a backend; see the module documentation.
pub(crate) struct TextFallback<B>(pub B);

impl<B: DrawingBackend> DrawingBackend for TextFallback<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        p: BackendCoord,
        c: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(p, c)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_text(text, style, pos)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        match self.0.estimate_text_size(text, style) {
            Err(DrawingErrorKind::FontError(_)) => Ok(estimate(text, style.size())),
            other => other,
        }
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}

/// Width and height of `text` at font size `size` without a font: the character count
/// times an average advance; the height the drawing library uses for one line.
pub(crate) fn estimate(text: &str, size: f64) -> (u32, u32) {
    let width = text.chars().count() as f64 * size * ADVANCE;
    (width.round() as u32, (size / 1.24).round() as u32)
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn estimate_grows_with_length_and_size() {
        assert_eq!(estimate("", 20.0).0, 0);
        assert!(estimate("speedup", 20.0).0 > estimate("γ", 20.0).0);
        assert!(estimate("speedup", 24.0).0 > estimate("speedup", 12.0).0);
        assert_eq!(estimate("x", 24.8).1, 20);
    }
}
