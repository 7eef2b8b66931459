use super::*;

fn tools(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn parses_the_three_spellings() {
    assert_eq!("off".parse(), Ok(UnattendedPolicy::Off));
    assert_eq!("deny".parse(), Ok(UnattendedPolicy::Deny));
    assert_eq!(
        "allow=read_file,list_dir".parse(),
        Ok(UnattendedPolicy::Allow {
            tools: tools(&["read_file", "list_dir"])
        })
    );
    assert_eq!(
        "allow=one".parse(),
        Ok(UnattendedPolicy::Allow {
            tools: tools(&["one"])
        })
    );
    assert_eq!(
        " allow=a, b ".parse(),
        Ok(UnattendedPolicy::Allow {
            tools: tools(&["a", "b"])
        })
    );
}

#[test]
fn rejects_anything_else_with_a_clear_message() {
    for bad in ["", "on", "Deny", "allow", "allowed=x", "deny=x"] {
        let error = bad.parse::<UnattendedPolicy>().unwrap_err();
        assert_eq!(error, PolicyParseError::Unknown(bad.to_owned()));
        assert!(
            error
                .to_string()
                .contains("expected `off`, `deny` or `allow=tool1,tool2`"),
            "{error}"
        );
    }
    assert_eq!(
        "allow=".parse::<UnattendedPolicy>(),
        Err(PolicyParseError::EmptyAllowList)
    );
    assert_eq!(
        "allow=a,,b".parse::<UnattendedPolicy>(),
        Err(PolicyParseError::EmptyToolName("allow=a,,b".to_owned()))
    );
    assert_eq!(
        "allow=a,".parse::<UnattendedPolicy>(),
        Err(PolicyParseError::EmptyToolName("allow=a,".to_owned()))
    );
}

#[test]
fn display_round_trips() {
    for text in ["off", "deny", "allow=a,b,c"] {
        let policy: UnattendedPolicy = text.parse().unwrap();
        assert_eq!(policy.to_string(), text);
        assert_eq!(policy.to_string().parse::<UnattendedPolicy>(), Ok(policy));
    }
}

#[test]
fn off_is_the_default_and_configures_an_inert_engine() {
    assert_eq!(UnattendedPolicy::default(), UnattendedPolicy::Off);
    let config = UnattendedPolicy::Off.engine_config(Duration::from_secs(5));
    assert!(config.is_inert());
}

#[test]
fn deny_and_allow_answer_every_kind_and_execute_nothing() {
    let grace = Duration::from_millis(1234);
    let deny = UnattendedPolicy::Deny.engine_config(grace);
    assert_eq!(deny.client_id, None);
    assert_eq!(deny.grace, grace);
    assert_eq!(deny.chat_input, AutoAnswer::AfterGrace);
    assert_eq!(deny.tool_confirmation, AutoAnswer::AfterGrace);
    assert_eq!(deny.tool_authentication, AutoAnswer::AfterGrace);
    assert!(deny.approve_tools.is_empty());

    let allow: UnattendedPolicy = "allow=read_file".parse().unwrap();
    let config = allow.engine_config(grace);
    assert_eq!(config.approve_tools, tools(&["read_file"]));
    assert!(allow.approves("read_file"));
    assert!(!allow.approves("shell"));
    assert!(!UnattendedPolicy::Deny.approves("read_file"));
}
