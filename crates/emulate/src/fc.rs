//! `multios fc`.
