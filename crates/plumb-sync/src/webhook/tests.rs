use super::*;
use serde_json::json;

fn fixture(name: &str) -> &'static [u8] {
    match name {
        "github" => include_bytes!("testdata/github-push.json"),
        "gitlab" => include_bytes!("testdata/gitlab-push.json"),
        "bitbucket" => include_bytes!("testdata/bitbucket-push.json"),
        "bitbucketserver" => include_bytes!("testdata/bitbucketserver-refs-changed.json"),
        "gitea" => include_bytes!("testdata/gitea-push.json"),
        _ => unreachable!("no fixture {name}"),
    }
}

fn push(headers: &[(&str, &str)], body: &[u8], secrets: &Secrets) -> Push {
    match receive(&Headers::from_pairs(headers.iter().copied()), body, secrets) {
        Ok(Received::Push(p)) => p,
        other => panic!("not a push: {other:?}"),
    }
}

fn refused(headers: &[(&str, &str)], body: &[u8], secrets: &Secrets) -> WebhookError {
    receive(&Headers::from_pairs(headers.iter().copied()), body, secrets).expect_err("refused")
}

fn secrets() -> Secrets {
    Secrets {
        github: Some("gh-secret".into()),
        gitlab: Some("gl-token".into()),
        bitbucket_uuid: Some("{82b7d8d6-1c4a-4f0e-9ef3-1d2c3b4a5f60}".into()),
        bitbucket_server: Some("bbs-secret".into()),
        gogs: Some("gogs-secret".into()),
        gitea: Some("gitea-secret".into()),
    }
}

#[test]
fn github_signature_is_checked_against_githubs_published_example() {
    // GitHub's documented example: secret "It's a Secret to Everybody", body
    // "Hello, World!".
    let s = Secrets {
        github: Some("It's a Secret to Everybody".into()),
        ..Secrets::default()
    };
    let good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    let h =
        |sig: &str| Headers::from_pairs([("X-GitHub-Event", "ping"), ("X-Hub-Signature-256", sig)]);
    assert_eq!(
        receive(&h(good), b"Hello, World!", &s),
        Ok(Received::Ignored {
            provider: Provider::GitHub,
            event: "ping".into()
        })
    );
    let bad = good.replace("757", "758");
    let e = receive(&h(&bad), b"Hello, World!", &s).expect_err("wrong");
    assert_eq!(e.http_status(), 401);
    assert_eq!(
        e.to_string(),
        "github webhook: the signature does not match the body"
    );
    assert_eq!(
        sign_hex("It's a Secret to Everybody", b"Hello, World!"),
        good.trim_start_matches("sha256=")
    );
}

#[test]
fn github_push() {
    let body = fixture("github");
    let sig = format!("sha256={}", sign_hex("gh-secret", body));
    let p = push(
        &[("X-GitHub-Event", "push"), ("X-Hub-Signature-256", &sig)],
        body,
        &secrets(),
    );
    assert_eq!(p.provider, Provider::GitHub);
    assert_eq!(p.revisions, ["main"]);
    assert!(p.touched_head);
    assert_eq!(p.changed_files, ["overlays/prod/kustomization.yaml"]);
    assert!(p.names_repo("https://github.com/acme/payments-config.git"));
    // Unsigned, wrongly signed, signed with another secret, a malformed header: refused
    // before the body is read.
    let unsigned = refused(&[("X-GitHub-Event", "push")], body, &secrets());
    assert_eq!(
        unsigned.to_string(),
        "github webhook: the request is not signed and a secret is configured"
    );
    let other = format!("sha256={}", sign_hex("another", body));
    for sig in [other.as_str(), "sha256=zz", "sha1=abcd", "sha256="] {
        let e = refused(
            &[("X-GitHub-Event", "push"), ("X-Hub-Signature-256", sig)],
            body,
            &secrets(),
        );
        assert_eq!(e.http_status(), 401, "{sig}: {e}");
    }
    // A changed body no longer matches its signature.
    let mut tampered = body.to_vec();
    tampered.push(b' ');
    assert_eq!(
        refused(
            &[("X-GitHub-Event", "push"), ("X-Hub-Signature-256", &sig)],
            &tampered,
            &secrets()
        )
        .http_status(),
        401
    );
    // Without a secret, the request is taken unsigned (as Argo CD does).
    let p = push(&[("x-github-event", "push")], body, &Secrets::default());
    assert_eq!(p.revisions, ["main"]);
}

#[test]
fn gitlab_push_and_token() {
    let body = fixture("gitlab");
    let p = push(
        &[
            ("X-Gitlab-Event", "Push Hook"),
            ("X-Gitlab-Token", "gl-token"),
        ],
        body,
        &secrets(),
    );
    assert_eq!(p.provider, Provider::GitLab);
    assert_eq!(p.revisions, ["main"]);
    assert!(p.touched_head);
    assert_eq!(
        p.changed_files,
        [
            "overlays/prod/kustomization.yaml",
            "overlays/prod/pull-policy.yaml"
        ]
    );
    assert!(p.names_repo("git@gitlab.acme.example:platform/payments/payments-config.git"));
    assert!(p.names_repo("https://GitLab.acme.example/Platform/Payments/payments-config"));
    assert!(!p.names_repo("https://gitlab.acme.example/platform/payments-config"));
    for token in [None, Some("gl-tokeN"), Some("gl-token "), Some("")] {
        let mut h = vec![("X-Gitlab-Event", "Push Hook")];
        if let Some(t) = token {
            h.push(("X-Gitlab-Token", t));
        }
        assert_eq!(
            refused(&h, body, &secrets()).http_status(),
            401,
            "{token:?}"
        );
    }
    // A system hook's push counts; its other events do not.
    let p = push(
        &[
            ("X-Gitlab-Event", "System Hook"),
            ("X-Gitlab-Token", "gl-token"),
        ],
        body,
        &secrets(),
    );
    assert_eq!(p.revisions, ["main"]);
    let mr = br#"{"object_kind": "merge_request"}"#;
    assert!(matches!(
        receive(
            &Headers::from_pairs([
                ("X-Gitlab-Event", "System Hook"),
                ("X-Gitlab-Token", "gl-token")
            ]),
            mr,
            &secrets()
        ),
        Ok(Received::Ignored { .. })
    ));
}

#[test]
fn bitbucket_cloud_push_and_uuid() {
    let body = fixture("bitbucket");
    let uuid = "{82b7d8d6-1c4a-4f0e-9ef3-1d2c3b4a5f60}";
    let p = push(
        &[("X-Event-Key", "repo:push"), ("X-Hook-UUID", uuid)],
        body,
        &secrets(),
    );
    assert_eq!(p.provider, Provider::Bitbucket);
    assert_eq!(p.revisions, ["main"]);
    assert!(p.touched_head, "the payload cannot tell: assume HEAD");
    assert!(p.changed_files.is_empty());
    assert!(p.names_repo("git@bitbucket.org:acme/payments-config.git"));
    assert!(p.names_repo("ssh://git@altssh.bitbucket.org:443/acme/payments-config"));
    let e = refused(
        &[
            ("X-Event-Key", "repo:push"),
            ("X-Hook-UUID", "{00000000-1c4a-4f0e-9ef3-1d2c3b4a5f60}"),
        ],
        body,
        &secrets(),
    );
    assert_eq!(
        e.to_string(),
        "bitbucket webhook: X-Hook-UUID does not match the configured UUID"
    );
    // Not a push: authenticated, then ignored.
    assert!(matches!(
        receive(
            &Headers::from_pairs([
                ("X-Event-Key", "pullrequest:created"),
                ("X-Hook-UUID", uuid)
            ]),
            b"{}",
            &secrets()
        ),
        Ok(Received::Ignored {
            provider: Provider::Bitbucket,
            ..
        })
    ));
}

#[test]
fn bitbucket_server_push_and_signature() {
    let body = fixture("bitbucketserver");
    let sig = format!("sha256={}", sign_hex("bbs-secret", body));
    let p = push(
        &[
            ("X-Event-Key", "repo:refs_changed"),
            ("X-Hub-Signature", &sig),
        ],
        body,
        &secrets(),
    );
    assert_eq!(p.provider, Provider::BitbucketServer);
    assert_eq!(p.revisions, ["main"]);
    assert!(p.names_repo("https://bitbucket.acme.example/scm/pay/payments-config.git"));
    assert!(p.names_repo("ssh://git@bitbucket.acme.example:7999/PAY/payments-config.git"));
    assert_eq!(
        refused(&[("X-Event-Key", "repo:refs_changed")], body, &secrets()).http_status(),
        401
    );
    // The ping Bitbucket Server sends when the hook is saved.
    let ping = br#"{"test": true}"#;
    let sig = format!("sha256={}", sign_hex("bbs-secret", ping));
    assert!(matches!(
        receive(
            &Headers::from_pairs([
                ("X-Event-Key", "diagnostics:ping"),
                ("X-Hub-Signature", &sig)
            ]),
            ping,
            &secrets()
        ),
        Ok(Received::Ignored { .. })
    ));
}

#[test]
fn gitea_push_wins_over_the_github_and_gogs_headers_it_also_sends() {
    let body = fixture("gitea");
    let gitea_sig = sign_hex("gitea-secret", body);
    let github_sig = format!("sha256={}", sign_hex("gh-secret", body));
    let gogs_sig = sign_hex("gogs-secret", body);
    let headers = [
        ("X-GitHub-Event", "push"),
        ("X-Gitea-Event", "push"),
        ("X-Gogs-Event", "push"),
        ("X-Gitea-Signature", gitea_sig.as_str()),
        ("X-Gogs-Signature", gogs_sig.as_str()),
        ("X-Hub-Signature-256", github_sig.as_str()),
    ];
    let p = push(&headers, body, &secrets());
    assert_eq!(p.provider, Provider::Gitea);
    assert_eq!(p.revisions, ["main"]);
    assert_eq!(
        p.changed_files,
        [
            "overlays/staging/extra.yaml",
            "overlays/staging/kustomization.yaml"
        ]
    );
    assert!(p.names_repo("ssh://git@gitea.acme.example:2222/platform/payments-config.git"));
    // The Gitea secret is checked, not the GitHub one.
    let mut wrong = headers;
    wrong[3] = ("X-Gitea-Signature", gogs_sig.as_str());
    assert_eq!(refused(&wrong, body, &secrets()).http_status(), 401);
    // Without webhook.gitea.secret, Gitea is checked against the Gogs secret.
    let gogs_only = Secrets {
        gogs: Some("gogs-secret".into()),
        ..Secrets::default()
    };
    assert_eq!(refused(&headers, body, &gogs_only).http_status(), 401);
    let mut signed_for_gogs = headers;
    signed_for_gogs[3] = ("X-Gitea-Signature", gogs_sig.as_str());
    assert_eq!(
        push(&signed_for_gogs, body, &gogs_only).provider,
        Provider::Gitea
    );
    // Gogs alone.
    let p = push(
        &[
            ("X-Gogs-Event", "push"),
            ("X-Gogs-Signature", gogs_sig.as_str()),
        ],
        body,
        &secrets(),
    );
    assert_eq!(p.provider, Provider::Gogs);
}

#[test]
fn unknown_and_malformed_requests_are_refused() {
    let e = refused(&[("Content-Type", "application/json")], b"{}", &secrets());
    assert_eq!(e, WebhookError::UnknownProvider);
    assert_eq!(e.http_status(), 400);
    let none = Secrets::default();
    for (body, want) in [
        (&b"not json"[..], "github webhook: the body is not JSON"),
        (b"{}", "github webhook: no ref"),
        (
            br#"{"ref": "refs/heads/main"}"#,
            "github webhook: the payload names no repository URL",
        ),
    ] {
        let e = refused(&[("X-GitHub-Event", "push")], body, &none);
        assert_eq!(e.http_status(), 400);
        assert!(e.to_string().starts_with(want), "{e}");
    }
    assert!(
        refused(
            &[("X-Event-Key", "repo:push"), ("X-Hook-UUID", "x")],
            b"{}",
            &none
        )
        .to_string()
        .contains("no push.changes")
    );
}

#[test]
fn repository_urls_compare_as_argo_cd_compares_them() {
    let key = |u: &str| repo_key(u).map(|(h, p)| format!("{h} {p}"));
    for (url, want) in [
        ("https://github.com/acme/web", Some("github.com acme/web")),
        (
            "https://github.com/acme/web.git/",
            Some("github.com acme/web"),
        ),
        (
            "http://user:pw@GitHub.com:8443/Acme/Web.git",
            Some("github.com acme/web"),
        ),
        (
            "ssh://git@github.com:22/acme/web.git",
            Some("github.com acme/web"),
        ),
        ("git@github.com:acme/web.git", Some("github.com acme/web")),
        ("git://127.0.0.1:9418/web.git", Some("127.0.0.1 web")),
        ("./local/path", None),
        ("https://github.com", None),
        ("", None),
    ] {
        assert_eq!(key(url).as_deref(), want, "{url}");
    }
    let p = Push {
        provider: Provider::GitHub,
        repo_urls: vec!["https://dev.azure.com/acme/web".into()],
        revisions: vec![],
        touched_head: false,
        changed_files: vec![],
    };
    assert!(p.names_repo("git@ssh.dev.azure.com:acme/web"));
    assert!(!p.names_repo("git@ssh.example.com:acme/web"));
    assert!(!p.names_repo("https://dev.azure.com/acme/web-other"));
}

fn app(sources: serde_json::Value, paths: Option<&str>) -> Value {
    let mut app = json!({"metadata": {"name": "web", "namespace": "plumb"}, "spec": sources});
    if let Some(p) = paths {
        app["metadata"]["annotations"] = json!({REFRESH_PATHS_ANNOTATION: p});
    }
    app
}

#[test]
fn apps_are_refreshed_by_repository_revision_and_paths() {
    let pushed = |rev: &str, head: bool, files: &[&str]| Push {
        provider: Provider::GitHub,
        repo_urls: vec!["https://github.com/acme/payments-config".into()],
        revisions: vec![rev.into()],
        touched_head: head,
        changed_files: files.iter().map(|f| f.to_string()).collect(),
    };
    let single = |url: &str, rev: &str| {
        app(
            json!({"source": {"repoURL": url, "targetRevision": rev, "path": "overlays/prod"}}),
            None,
        )
    };
    let url = "git@github.com:acme/payments-config.git";
    let main = pushed("main", true, &[]);
    for (rev, want) in [
        ("", true),
        ("HEAD", true),
        ("main", true),
        ("refs/heads/main", true),
        ("release-1", false),
        ("v1.2.0", false),
        ("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", false),
    ] {
        assert_eq!(refreshes(&single(url, rev), &main), want, "{rev}");
    }
    // A push to another branch: only apps following it.
    let feature = pushed("feature/x", false, &[]);
    assert!(!refreshes(&single(url, "HEAD"), &feature));
    assert!(refreshes(&single(url, "feature/x"), &feature));
    assert!(refreshes(&single(url, "refs/heads/feature/x"), &feature));
    // A tag.
    assert!(refreshes(
        &single(url, "refs/tags/v2"),
        &pushed("v2", false, &[])
    ));
    // Another repository.
    assert!(!refreshes(
        &single("https://github.com/acme/other", "HEAD"),
        &main
    ));

    // Multi-source: any source.
    let multi = app(
        json!({"sources": [
            {"repoURL": "https://charts.example.com", "chart": "web", "targetRevision": "1.0.0"},
            {"repoURL": url, "targetRevision": "main", "ref": "values"}]}),
        None,
    );
    assert!(refreshes(&multi, &main));
    // A hydrator's dry source.
    let hydrated = app(
        json!({"sourceHydrator": {"drySource": {"repoURL": url, "targetRevision": "HEAD", "path": "dry"}}}),
        None,
    );
    assert!(refreshes(&hydrated, &main));

    // manifest-generate-paths: relative to the source path, or to the root with `/`.
    let with_paths = |p: &str| {
        app(
            json!({"source": {"repoURL": url, "targetRevision": "HEAD", "path": "overlays/prod"}}),
            Some(p),
        )
    };
    let touched = pushed("main", true, &["overlays/prod/kustomization.yaml"]);
    let elsewhere = pushed("main", true, &["overlays/staging/kustomization.yaml"]);
    for (paths, push, want) in [
        (".", &touched, true),
        (".", &elsewhere, false),
        ("../staging", &elsewhere, true),
        ("/overlays/staging; .", &elsewhere, true),
        ("/base", &touched, false),
        ("/", &elsewhere, true),
        ("/overlays/pro", &touched, false),
        // No file list (Bitbucket): refreshed.
        (".", &main, true),
    ] {
        assert_eq!(
            refreshes(&with_paths(paths), push),
            want,
            "{paths} {push:?}"
        );
    }
}

#[test]
fn secret_files_read_plain_maps_and_secrets() {
    let plain = json!({"webhook.github.secret": "gh\n", "webhook.gitlab.secret": "gl",
        "admin.password": "ignored"});
    let s = Secrets::from_document(&plain).expect("plain");
    assert_eq!(s.github.as_deref(), Some("gh"));
    assert_eq!(s.gitlab.as_deref(), Some("gl"));
    assert_eq!(
        s.configured(),
        ["webhook.github.secret", "webhook.gitlab.secret"]
    );
    // The Debug form names keys only.
    assert!(!format!("{s:?}").contains("gh\""), "{s:?}");

    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "argocd-secret"},
        "data": {"webhook.bitbucket.uuid": "ezgyYjd9", "server.secretkey": "eA=="},
        "stringData": {"webhook.gogs.secret": "gogs"}});
    let s = Secrets::from_document(&secret).expect("secret");
    assert_eq!(s.bitbucket_uuid.as_deref(), Some("{82b7}"));
    assert_eq!(s.gogs.as_deref(), Some("gogs"));
    assert_eq!(s.github, None);

    for (doc, want) in [
        (
            json!({"webhook.githb.secret": "x"}),
            "webhook.githb.secret: unknown webhook key",
        ),
        (
            json!({"webhook.github.secret": 3}),
            "webhook.github.secret: not a string",
        ),
        (
            json!({"kind": "Secret", "data": {"webhook.github.secret": "!!"}}),
            "data.webhook.github.secret: not base64",
        ),
        (json!(["x"]), "expected a map"),
    ] {
        let e = Secrets::from_document(&doc).expect_err("refused");
        assert!(e.starts_with(want), "{e}");
    }
}
