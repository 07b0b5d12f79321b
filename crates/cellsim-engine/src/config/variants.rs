//! Model variants: the mechanisms no source fixes, as data.
//!
//! Where the documents we have do not say how the hardware did something (the
//! EIB's flow control, the XDR's timings, the arbiter's tie-break), the model
//! keeps every candidate it implements as a *variant*: a machine setting (its
//! `key`, e.g. `eib.put_flow`) whose values are the candidates (`choices`).
//! A machine file's `[variants.NAME]` table describes one, beside the setting
//! it selects:
//!
//! ```toml
//! [variants.put_flow]
//! key = "eib.put_flow"
//! about = "whether a put's data waits for a free buffer at its receiver"
//! why = "none: ..."            # why this machine's value is the default
//! [variants.put_flow.choices.none]
//! status = "sourced"           # a document says so ...
//! source = "Kistler et al. 2006: ..."
//! what = "..."
//! [variants.put_flow.choices.credits]
//! status = "inferred"          # ... or no document, and the visible statements it explains
//! explains = ["000-f6b-pairwise-put-get"]
//! params = ["eib.put_credits"]
//! what = "..."
//! ```
//!
//! The machine file's value of `key` is the default and `why` says why; an
//! override (`eib.put_flow=credits`) selects another choice like any setting.
//! Checked here: the key exists, its value is one of the choices, a sourced
//! choice cites its source, an inferred one names what it explains, every
//! parameter named exists. Whether the statements named exist and are visible
//! is the Python side's check (it owns the published values).

use crate::error::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Whether a choice stands on a document or on what it explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A document says the hardware works this way (`source` cites it).
    Sourced,
    /// No document; proposed to explain the visible statements in `explains`.
    Inferred,
}

impl Status {
    /// `sourced` or `inferred`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Sourced => "sourced",
            Status::Inferred => "inferred",
        }
    }
}

/// One candidate mechanism of a variant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// Sourced or inferred.
    pub status: Status,
    /// The document, for a sourced choice.
    #[serde(default)]
    pub source: String,
    /// The visible published statements (ids of `published.toml`) an inferred choice is meant to explain.
    #[serde(default)]
    pub explains: Vec<String>,
    /// The machine settings that parameterise it (`eib.put_credits`).
    #[serde(default)]
    pub params: Vec<String>,
    /// What the mechanism does, in a sentence.
    pub what: String,
}

/// A mechanism with several candidate forms, selected by a machine setting.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// The machine setting that selects the choice (`eib.put_flow`).
    pub key: String,
    /// The question the variant answers, in a line.
    pub about: String,
    /// Why the machine file's value is the default.
    pub why: String,
    /// The candidates, by the value of `key` that selects each.
    pub choices: BTreeMap<String, Choice>,
    /// The choice this machine runs (the value of `key`, overrides applied).
    #[serde(skip)]
    pub value: String,
}

/// A TOML value as a choice name: strings as they are, booleans and numbers as written.
pub fn choice_name(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The value at a dotted key of a machine table.
pub fn lookup<'a>(table: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut v = table.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

/// Checks every variant of a resolved machine table (see the module docs) and
/// records the choice each runs.
pub fn check(
    table: &toml::Table,
    variants: &mut BTreeMap<String, Variant>,
) -> Result<(), ConfigError> {
    let bad =
        |key: String, value: String, rule: String| Err(ConfigError::Invalid { key, value, rule });
    for (name, v) in variants.iter_mut() {
        let at = format!("variants.{name}");
        let Some(value) = lookup(table, &v.key) else {
            return bad(
                format!("{at}.key"),
                v.key.clone(),
                "names no setting of the machine file".into(),
            );
        };
        let chosen = choice_name(value);
        if !v.choices.contains_key(&chosen) {
            let known: Vec<&str> = v.choices.keys().map(String::as_str).collect();
            return bad(
                v.key.clone(),
                chosen,
                format!(
                    "the variant {name} has the choices {} (machine file [variants.{name}])",
                    known.join(", ")
                ),
            );
        }
        v.value = chosen;
        if v.why.trim().is_empty() {
            return bad(
                format!("{at}.why"),
                String::new(),
                "a variant says why its default is chosen".into(),
            );
        }
        for (c, choice) in &v.choices {
            let here = format!("{at}.choices.{c}");
            match choice.status {
                Status::Sourced if choice.source.trim().is_empty() => {
                    return bad(
                        format!("{here}.source"),
                        String::new(),
                        "a sourced choice cites its document".into(),
                    )
                }
                Status::Inferred if choice.explains.is_empty() => {
                    return bad(
                        format!("{here}.explains"),
                        "[]".into(),
                        "an inferred choice names the visible statements it is meant to explain"
                            .into(),
                    )
                }
                _ => {}
            }
            if let Some(p) = choice.params.iter().find(|p| lookup(table, p).is_none()) {
                return bad(
                    format!("{here}.params"),
                    p.clone(),
                    "names no setting of the machine file".into(),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::MachineConfig;

    fn with(replace: (&str, &str)) -> String {
        MachineConfig::preset_text("qs20-1chip")
            .unwrap()
            .replacen(replace.0, replace.1, 1)
    }

    #[test]
    fn the_presets_declare_variants_and_their_values_are_choices() {
        for name in MachineConfig::preset_names() {
            let c = MachineConfig::load(name, &[]).unwrap();
            assert!(c.variants.contains_key("recv_switch"), "{name}");
        }
        let blade = MachineConfig::load("qs20", &[]).unwrap();
        assert!(blade.variants["window_writes"].why.starts_with("true"));
    }

    #[test]
    fn an_override_selects_another_choice_and_a_bad_one_names_the_choices() {
        let c =
            MachineConfig::load("qs20-1chip", &["eib.recv_switch_bus_cycles=0".into()]).unwrap();
        assert_eq!(c.eib.recv_switch_bus_cycles, 0);
        let e = MachineConfig::load("qs20-1chip", &["eib.recv_switch_bus_cycles=2".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("eib.recv_switch_bus_cycles = 2") && e.contains("choices 0, 1"),
            "{e}"
        );
    }

    #[test]
    fn a_sourced_choice_cites_and_an_inferred_one_explains() {
        let text = with(("source = \"architecture notes", "source = \"\" # \""));
        let e = MachineConfig::from_toml("x", &text, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("variants.recv_switch.choices.0.source"), "{e}");
        let text = with((
            "explains = [\"000-f6a-get-outperforms-put\"]",
            "explains = []",
        ));
        let e = MachineConfig::from_toml("x", &text, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("variants.recv_switch.choices.1.explains"), "{e}");
    }

    #[test]
    fn a_variant_names_a_real_setting() {
        let text = with((
            "key = \"eib.recv_switch_bus_cycles\"",
            "key = \"eib.no_such\"",
        ));
        let e = MachineConfig::from_toml("x", &text, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("variants.recv_switch.key") && e.contains("eib.no_such"),
            "{e}"
        );
    }
}
