use super::*;

fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> TokenCounts {
    TokenCounts {
        input,
        output,
        cache_read,
        cache_write,
    }
}

#[test]
fn a_cost_prices_each_kind_of_token_once() {
    let price = ModelPrice {
        input: 4.0,
        cached_input: 0.2,
        cache_write: Some(5.0),
        output: 20.0,
    };
    // 1M input of which 200k read from and 100k written to the cache: 700k plain input.
    let cost = price.cost(&tokens(1_000_000, 10_000, 200_000, 100_000));
    let expected = 0.7 * 4.0 + 0.2 * 0.2 + 0.1 * 5.0 + 0.01 * 20.0;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    // Without a cache-write price, writes are plain input.
    let openai = ModelPrice {
        cache_write: None,
        ..price
    };
    let cost = openai.cost(&tokens(1_000_000, 0, 0, 1_000_000));
    assert!((cost - 4.0).abs() < 1e-9);
}

#[test]
fn the_claude_code_default_matches_what_claude_code_itself_charges() {
    // Claude Code 2.1.328 reported `costUSD: 0.0016` for 200 input and 40 output tokens of
    // claude-opus-5-5 in the captured transcripts.
    let cost = PriceTable::builtin()
        .cost("claude-opus-5-5", &tokens(200, 40, 0, 0))
        .unwrap();
    assert!((cost - 0.0016).abs() < 1e-12, "{cost}");
}

#[test]
fn model_ids_are_normalised() {
    for (raw, base) in [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-sonnet-4-5",
        ),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
        ("gpt-5.5[medium]", "gpt-5.5"),
        ("gpt-5.1-2025-11-13", "gpt-5.1"),
        ("openai/GPT-5.4", "gpt-5.4"),
        ("gpt-5.4", "gpt-5.4"),
        ("gpt-5.4-mini", "gpt-5.4-mini"),
    ] {
        assert_eq!(normalise_model(raw), base, "{raw}");
    }
    let table = PriceTable::builtin();
    assert!(table.get("claude-sonnet-4.5").is_some());
    // An id that only starts like a priced one is not that model.
    assert!(table.get("claude-sonnet-5-5-turbo").is_none());
    assert!(table.get("default").is_none());
    assert!(
        table.get("gpt-6.1-sol").is_none(),
        "no public price page was found for it"
    );
}

#[test]
fn every_builtin_entry_names_its_source_and_is_well_formed() {
    let table = PriceTable::builtin();
    assert_eq!(
        table.entries().count(),
        BUILTIN.len(),
        "no id is listed twice"
    );
    for (model, entry) in table.entries() {
        assert!(entry.source.starts_with("https://"), "{model}");
        assert_eq!(entry.as_of.as_deref(), Some("2026-12-06"), "{model}");
        entry.price.check().unwrap();
        assert!(
            entry.price.cached_input <= entry.price.input,
            "{model}: a cache read costs more than input"
        );
    }
}

#[test]
fn a_price_file_adds_and_overrides_entries() {
    let text = r#"
        [models."claude-opus-5-5"]
        input = 1.0
        cached_input = 0.1
        output = 2.0
        [models."local-llama"]
        input = 0.0
        cached_input = 0.0
        output = 0.0
        source = "our own hardware"
    "#;
    let table = PriceTable::parse_file("prices.toml", text).unwrap();
    let opus = table.get("claude-opus-5-5").unwrap();
    assert_eq!(opus.price.input, 1.0);
    assert_eq!(opus.source, "prices.toml");
    assert_eq!(table.get("local-llama").unwrap().source, "our own hardware");
    assert!(table.get("gpt-5.5").is_some(), "the built-in entries stay");
    let only = PriceTable::parse_file(
        "p",
        "builtin = false\n[models.m]\ninput = 1\ncached_input = 1\noutput = 1\n",
    )
    .unwrap();
    assert_eq!(only.entries().count(), 1);
}

#[test]
fn a_bad_price_file_is_refused_naming_what_is_wrong() {
    let refused = |text: &str| {
        PriceTable::parse_file("p.toml", text)
            .unwrap_err()
            .to_string()
    };
    assert!(refused("[models.m]\ninput = 1\noutput = 1\n").contains("cached_input"));
    assert!(
        refused("[models.m]\ninput = -1\ncached_input = 0\noutput = 1\n")
            .contains("model `m`: `input` must be a number ≥ 0")
    );
    assert!(
        refused("[models.m]\ninput = 1\ncached_input = 0\noutput = 1\ncolour = 1\n")
            .contains("colour")
    );
    assert!(refused("nonsense").starts_with("price file p.toml:"));
    assert!(
        refused("[models.\" \"]\ninput = 1\ncached_input = 0\noutput = 1\n")
            .contains("not a model id")
    );
}

#[test]
fn token_deltas_never_go_below_zero() {
    let later = tokens(10, 5, 2, 1);
    let earlier = tokens(4, 6, 2, 0);
    assert_eq!(later.since(&earlier), tokens(6, 0, 0, 1));
    assert!(earlier.since(&earlier).is_empty());
}
