//! [`PriceTable`]: what a model's tokens cost, for the host's API-equivalent cost estimate.
//!
//! A price is US dollars per million tokens: uncached input, cached input (read from the prompt
//! cache), cache writes, and output. The built-in table covers the models the agent CLIs use
//! by default and their family members whose price a public page states, each entry with the
//! page's address and the date it was read; a model without an entry costs "unknown", never 0.
//! `agent-host serve --prices FILE` adds or overrides entries ([`PriceTable::parse_file`]).
//!
//! The figure is an estimate at list prices: subscription users are not billed per token,
//! long-context surcharges (OpenAI bills a request over 272 000 input tokens at a higher rate,
//! Claude Haiku 5.5 one over 100 000) are not modelled, and a cache write is priced at the
//! five-minute rate.
//!
//! Model ids are compared after [`normalise_model`]: dated snapshots, effort suffixes, cloud
//! prefixes and dotted version numbers name the same model as the base id.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A model's prices, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens neither read from nor written to the cache.
    pub input: f64,
    /// Input tokens read from the cache.
    pub cached_input: f64,
    /// Input tokens written to the cache; `None`: billed as plain input (OpenAI before GPT-5.6).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Output tokens (reasoning included).
    pub output: f64,
}

/// One entry of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceEntry {
    /// The prices.
    pub price: ModelPrice,
    /// Where they were taken from (a page's address, or the price file's path).
    pub source: String,
    /// When the source was read (`YYYY-MM-DD`), when known.
    pub as_of: Option<String>,
}

/// Token counts of one or more model calls, in the host's meanings: `input` includes the
/// cached tokens, `cache_read` and `cache_write` are parts of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Every input token.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
}

impl TokenCounts {
    /// `self - earlier`, field by field, never below 0 (a report that went down adds nothing).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cache_read: self.cache_read.saturating_sub(earlier.cache_read),
            cache_write: self.cache_write.saturating_sub(earlier.cache_write),
        }
    }

    /// Whether every count is 0.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl ModelPrice {
    /// What `tokens` cost, in US dollars.
    pub fn cost(&self, tokens: &TokenCounts) -> f64 {
        let uncached = tokens
            .input
            .saturating_sub(tokens.cache_read)
            .saturating_sub(tokens.cache_write);
        let per_million = |count: u64, price: f64| count as f64 * price / 1_000_000.0;
        per_million(uncached, self.input)
            + per_million(tokens.cache_read, self.cached_input)
            + per_million(tokens.cache_write, self.cache_write.unwrap_or(self.input))
            + per_million(tokens.output, self.output)
    }

    fn check(&self) -> Result<(), String> {
        let fields = [
            ("input", Some(self.input)),
            ("cached_input", Some(self.cached_input)),
            ("cache_write", self.cache_write),
            ("output", Some(self.output)),
        ];
        for (name, value) in fields {
            if let Some(value) = value
                && !(value.is_finite() && value >= 0.0)
            {
                return Err(format!("`{name}` must be a number ≥ 0, not {value}"));
            }
        }
        Ok(())
    }
}

/// A price file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("price file {path}: {reason}")]
pub struct PriceFileError {
    /// The file.
    pub path: String,
    /// What is wrong, naming the model and field.
    pub reason: String,
}

/// The models and their prices, keyed by normalised id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    entries: BTreeMap<String, PriceEntry>,
}

/// The price file's shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    /// Whether the built-in entries stay (default true).
    #[serde(default = "yes")]
    builtin: bool,
    #[serde(default)]
    models: BTreeMap<String, FileEntry>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    input: f64,
    cached_input: f64,
    #[serde(default)]
    cache_write: Option<f64>,
    output: f64,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    as_of: Option<String>,
}

impl PriceTable {
    /// A table with no entries: every model costs "unknown".
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in table.
    pub fn builtin() -> Self {
        let mut table = Self::empty();
        for (model, input, cached_input, cache_write, output, source, as_of) in BUILTIN {
            table.insert(
                model,
                PriceEntry {
                    price: ModelPrice {
                        input: *input,
                        cached_input: *cached_input,
                        cache_write: *cache_write,
                        output: *output,
                    },
                    source: (*source).to_owned(),
                    as_of: Some((*as_of).to_owned()),
                },
            );
        }
        table
    }

    /// Adds or replaces `model`'s entry.
    pub fn insert(&mut self, model: &str, entry: PriceEntry) {
        self.entries.insert(normalise_model(model), entry);
    }

    /// The built-in table with the entries of price file `text` (read from `path`) added or
    /// replacing built-in ones; with `builtin = false` in the file, only the file's entries.
    ///
    /// ```toml
    /// builtin = true                 # keep the built-in entries (the default)
    /// [models."my-model"]
    /// input = 3.0                    # US dollars per million uncached input tokens
    /// cached_input = 0.3             # … per million input tokens read from the cache
    /// cache_write = 3.75             # … per million written to it (optional: as input)
    /// output = 15.0                  # … per million output tokens
    /// source = "https://…"           # optional, shown with the entry
    /// as_of = "2026-12-01"           # optional
    /// ```
    pub fn parse_file(path: &str, text: &str) -> Result<Self, PriceFileError> {
        let error = |reason: String| PriceFileError {
            path: path.to_owned(),
            reason,
        };
        let file: PriceFile = toml::from_str(text).map_err(|e| error(e.message().to_owned()))?;
        let mut table = if file.builtin {
            Self::builtin()
        } else {
            Self::empty()
        };
        for (model, entry) in file.models {
            if normalise_model(&model).is_empty() {
                return Err(error(format!("`{model}` is not a model id")));
            }
            let price = ModelPrice {
                input: entry.input,
                cached_input: entry.cached_input,
                cache_write: entry.cache_write,
                output: entry.output,
            };
            price
                .check()
                .map_err(|reason| error(format!("model `{model}`: {reason}")))?;
            table.insert(
                &model,
                PriceEntry {
                    price,
                    source: entry.source.unwrap_or_else(|| path.to_owned()),
                    as_of: entry.as_of,
                },
            );
        }
        Ok(table)
    }

    /// The entry for `model`, by its normalised id.
    pub fn get(&self, model: &str) -> Option<&PriceEntry> {
        self.entries.get(&normalise_model(model))
    }

    /// What `tokens` on `model` cost; `None` when the model has no price.
    pub fn cost(&self, model: &str, tokens: &TokenCounts) -> Option<f64> {
        self.get(model).map(|entry| entry.price.cost(tokens))
    }

    /// Every entry, by normalised model id.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &PriceEntry)> {
        self.entries
            .iter()
            .map(|(model, entry)| (model.as_str(), entry))
    }
}

/// The id `model` is priced under: lowercase, without a provider or cloud prefix
/// (`openai/`, `anthropic.`, `us.anthropic.`), a bracketed suffix (`[medium]`, `[1m]`), a
/// Bedrock version (`-v1:0`) or a snapshot date (`-20250929`, `-2025-08-07`); Claude's dotted
/// versions take hyphens (`claude-sonnet-4.5` is `claude-sonnet-4-5`).
pub fn normalise_model(model: &str) -> String {
    let mut id = model.trim().to_ascii_lowercase();
    if let Some(at) = id.rfind('/') {
        id = id[at + 1..].to_owned();
    }
    if let Some(open) = id.find('[')
        && id.ends_with(']')
    {
        id.truncate(open);
    }
    if let Some(at) = id.find("anthropic.") {
        id = id[at + "anthropic.".len()..].to_owned();
    }
    for suffix in ["-v1:0", "-v1"] {
        if let Some(stripped) = id.strip_suffix(suffix) {
            id = stripped.to_owned();
        }
    }
    id = strip_date(&id).to_owned();
    if id.starts_with("claude-") {
        id = id.replace('.', "-");
    }
    id
}

/// `id` without a trailing `-YYYYMMDD` or `-YYYY-MM-DD`.
fn strip_date(id: &str) -> &str {
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, date)) = id.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return base;
    }
    let parts: Vec<&str> = id.rsplitn(4, '-').collect();
    if let [day, month, year, base] = parts.as_slice()
        && year.len() == 4
        && month.len() == 2
        && day.len() == 2
        && [day, month, year].iter().all(|part| digits(part))
    {
        return base;
    }
    id
}

const ANTHROPIC_OPUS_5_5: &str = "https://platform.claude.com/docs/zh-CN/models/opus-5-5/overview";
const ANTHROPIC_SONNET_5_5: &str =
    "https://platform.claude.com/docs/zh-CN/models/sonnet-5-5/overview";
const ANTHROPIC_SONNET_5: &str = "https://platform.claude.com/docs/zh-CN/models/sonnet-5/overview";
const ANTHROPIC_PRICING: &str = "https://platform.claude.com/docs/en/about-claude/pricing";
const ANTHROPIC_PRICING_OLD: &str = "https://docs.anthropic.com/en/docs/about-claude/pricing";
const GITHUB_PRICES: &str =
    "https://github.com/github/docs/blob/main/data/tables/copilot/models-and-pricing.yml";
const READ: &str = "2026-12-06";

/// `(model, input, cached input, cache write, output, source, read on)`, US dollars per
/// million tokens, short-context rates.
type Builtin = (
    &'static str,
    f64,
    f64,
    Option<f64>,
    f64,
    &'static str,
    &'static str,
);

const BUILTIN: &[Builtin] = &[
    // Claude Code's default model.
    (
        "claude-opus-5-5",
        4.0,
        0.20,
        Some(5.0),
        20.0,
        ANTHROPIC_OPUS_5_5,
        READ,
    ),
    (
        "claude-sonnet-5-5",
        2.0,
        0.20,
        Some(2.50),
        10.0,
        ANTHROPIC_SONNET_5_5,
        READ,
    ),
    (
        "claude-sonnet-5",
        2.0,
        0.20,
        Some(2.50),
        10.0,
        ANTHROPIC_SONNET_5,
        READ,
    ),
    (
        "claude-opus-5",
        5.0,
        0.50,
        Some(6.25),
        25.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-opus-4-8",
        5.0,
        0.50,
        Some(6.25),
        25.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-opus-4-7",
        5.0,
        0.50,
        Some(6.25),
        25.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-opus-4-6",
        5.0,
        0.50,
        Some(6.25),
        25.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-opus-4-5",
        5.0,
        0.50,
        Some(6.25),
        25.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-fable-5-1",
        10.0,
        0.25,
        Some(12.50),
        50.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-fable-5",
        10.0,
        1.0,
        Some(12.50),
        50.0,
        ANTHROPIC_PRICING,
        READ,
    ),
    (
        "claude-sonnet-4-6",
        3.0,
        0.30,
        Some(3.75),
        15.0,
        GITHUB_PRICES,
        READ,
    ),
    // Copilot's `claude-sonnet-4.5`.
    (
        "claude-sonnet-4-5",
        3.0,
        0.30,
        Some(3.75),
        15.0,
        GITHUB_PRICES,
        READ,
    ),
    (
        "claude-sonnet-4",
        3.0,
        0.30,
        Some(3.75),
        15.0,
        ANTHROPIC_PRICING_OLD,
        READ,
    ),
    // Claude Code's title and background model in older releases.
    (
        "claude-haiku-4-5",
        1.0,
        0.10,
        Some(1.25),
        5.0,
        GITHUB_PRICES,
        READ,
    ),
    (
        "claude-3-5-haiku",
        0.80,
        0.08,
        Some(1.0),
        4.0,
        ANTHROPIC_PRICING_OLD,
        READ,
    ),
    // Codex's and Copilot's models.
    ("gpt-5.5", 5.0, 0.50, None, 30.0, GITHUB_PRICES, READ),
    ("gpt-5.4", 2.50, 0.25, None, 15.0, GITHUB_PRICES, READ),
    ("gpt-5.4-mini", 0.75, 0.075, None, 4.50, GITHUB_PRICES, READ),
    ("gpt-5.4-nano", 0.20, 0.02, None, 1.25, GITHUB_PRICES, READ),
    (
        "gpt-5.6-terra",
        2.0,
        0.20,
        Some(2.50),
        12.0,
        GITHUB_PRICES,
        READ,
    ),
    (
        "gpt-5.6-luna",
        0.20,
        0.02,
        Some(0.25),
        1.20,
        GITHUB_PRICES,
        READ,
    ),
    (
        "gpt-5.3-codex",
        1.75,
        0.175,
        None,
        14.0,
        GITHUB_PRICES,
        READ,
    ),
    ("gpt-5.2", 1.75, 0.175, None, 14.0, GITHUB_PRICES, READ),
    (
        "gpt-5.2-codex",
        1.75,
        0.175,
        None,
        14.0,
        GITHUB_PRICES,
        READ,
    ),
    ("gpt-5-mini", 0.25, 0.025, None, 2.0, GITHUB_PRICES, READ),
    (
        "gpt-6-luna",
        0.10,
        0.01,
        Some(0.125),
        0.50,
        "https://developers.openai.com/api/docs/models/gpt-6-luna",
        READ,
    ),
    (
        "gpt-6.2-sol",
        2.0,
        0.10,
        Some(2.50),
        10.0,
        "https://developers.openai.com/api/docs/models/gpt-6.2-sol",
        READ,
    ),
    (
        "gpt-6-astra",
        10.0,
        1.0,
        Some(12.50),
        50.0,
        "https://developers.openai.com/api/docs/models/gpt-6-astra",
        READ,
    ),
    (
        "gpt-5.1",
        1.25,
        0.125,
        None,
        10.0,
        "https://developers.openai.com/api/docs/models/gpt-5.1",
        READ,
    ),
    (
        "gpt-5-codex",
        1.25,
        0.125,
        None,
        10.0,
        "https://developers.openai.com/api/docs/models/gpt-5-codex",
        READ,
    ),
];

#[cfg(test)]
#[path = "prices_tests.rs"]
mod tests;
