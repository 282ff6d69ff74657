#[cfg(test)]
pub(crate) mod choices;
pub mod text;
