//! The naïve model (eq. 3): every system call is delegated at no extra cost and the LWK speeds the
//! compute part up by γ.

use crate::error::{check_gamma, ModelError};

/// S_n = (p + (1 − p)/γ)⁻¹.
pub fn naive(p: f64, gamma: f64) -> Result<f64, ModelError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ModelError::P(p));
    }
    check_gamma(gamma)?;
    Ok(1.0 / (p + (1.0 - p) / gamma))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(naive(0.0, 2.0), Ok(2.0));
        assert_eq!(naive(1.0, 5.0), Ok(1.0));
        assert!(matches!(naive(1.5, 2.0), Err(ModelError::P(_))));
        assert!(matches!(naive(0.5, 0.0), Err(ModelError::Gamma(_))));
        assert!(matches!(naive(f64::NAN, 2.0), Err(ModelError::P(_))));
    }
}
