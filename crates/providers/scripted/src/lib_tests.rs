use super::*;

#[test]
fn the_provider_advertises_one_model_under_its_id() {
    let provider = ScriptedProvider::default();
    assert_eq!(provider.id(), "scripted");
    assert!(!provider.id().contains('-'));
    let info = provider.agent_info();
    assert_eq!(info.provider, "scripted");
    assert_eq!(info.display_name, "Scripted agent");
    assert!(!info.description.is_empty());
    let models: Vec<_> = info
        .models
        .iter()
        .map(|model| (model.id.as_str(), model.provider.as_str()))
        .collect();
    assert_eq!(models, [("scripted-1", "scripted")]);
}

#[test]
fn the_default_provider_plays_the_builtin_script() {
    assert_eq!(*ScriptedProvider::default().script(), Script::builtin());
    let builtin = Script::builtin();
    assert_eq!(builtin.turns.len(), 2);
    assert_eq!(builtin.default, None);
}
