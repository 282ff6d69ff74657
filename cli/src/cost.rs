//! Prices of Claude models and the cost of a request's tokens, for `ctx replay`'s cost
//! simulation. Prices are US dollars per million tokens; the defaults are the model
//! catalogue's (`ctxd_protocol::models`) and can be replaced by a JSON file
//! (`ctx replay --prices FILE`) shaped like [`PriceTable`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use ctxd_protocol::models::Prices;

/// Prices by model-name prefix (the longest matching prefix wins) and a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    pub models: BTreeMap<String, Prices>,
    pub default: Prices,
}

impl Default for PriceTable {
    /// The model catalogue's list prices.
    fn default() -> Self {
        let models = ctxd_protocol::models::CATALOGUE
            .iter()
            .map(|e| (e.id.to_string(), e.prices))
            .collect();
        PriceTable {
            models,
            default: Prices::list(3.0, 15.0),
        }
    }
}

impl PriceTable {
    pub fn load(path: &Path) -> Result<PriceTable> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the price table {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a price table", path.display()))
    }

    pub fn for_model(&self, model: &str) -> Prices {
        self.models
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map_or(self.default, |(_, p)| *p)
    }
}

/// Tokens of one call, split the way providers bill them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Billed {
    pub uncached: u64,
    /// Cache writes with the five-minute TTL.
    pub cache_write_5m: u64,
    /// Cache writes with the one-hour TTL.
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl Billed {
    /// Dollars, each kind of token at its price.
    pub fn cost(&self, p: &Prices) -> f64 {
        (self.uncached as f64 * p.input
            + self.cache_write_5m as f64 * p.cache_write_5m
            + self.cache_write_1h as f64 * p.cache_write_1h
            + self.cache_read as f64 * p.cache_read
            + self.output as f64 * p.output)
            / 1e6
    }

    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    pub fn input_side(&self) -> u64 {
        self.uncached + self.cache_write() + self.cache_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_unknown_models_get_the_default() {
        let t = PriceTable::default();
        assert_eq!(t.for_model("claude-opus-4-5-20251101").input, 5.0);
        assert_eq!(t.for_model("claude-opus-4-20250514").input, 15.0);
        assert_eq!(t.for_model("some-local-model"), t.default);
    }

    #[test]
    fn cost_adds_each_kind_at_its_price() {
        let p = Prices::list(3.0, 15.0);
        let b = Billed {
            uncached: 1_000_000,
            cache_write_5m: 1_000_000,
            cache_write_1h: 0,
            cache_read: 1_000_000,
            output: 1_000_000,
        };
        assert!((b.cost(&p) - (3.0 + 3.75 + 0.3 + 15.0)).abs() < 1e-9);
        let one_hour = Billed {
            cache_write_5m: 0,
            cache_write_1h: 1_000_000,
            ..b
        };
        assert!((one_hour.cost(&p) - (3.0 + 6.0 + 0.3 + 15.0)).abs() < 1e-9);
        assert_eq!(b.input_side(), 3_000_000);
    }

    #[test]
    fn a_table_file_round_trips() {
        let t = PriceTable::default();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(PriceTable::load(&path).unwrap(), t);
        std::fs::write(&path, "{\"models\": {}}").unwrap();
        assert!(PriceTable::load(&path).is_err());
    }
}
