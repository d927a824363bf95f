use super::config::*;
use super::http::*;
use super::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use tokio::io::AsyncWriteExt;

fn run<T>(f: impl core::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

fn answer(status: u16, body: &str) -> Answer {
    Answer { status, body: body.as_bytes().to_vec() }
}

fn kms(endpoint: &str, timeout: Duration) -> AwsKms {
    let credentials =
        AwsCredentials::new("AKIDKWIRETEST", "very-secret-key").with_session_token("secret-token");
    let mut options = AwsKmsOptions::new("eu-west-1", credentials);
    options.endpoint = Some(endpoint.to_owned());
    options.timeout = timeout;
    AwsKms::new(options).unwrap()
}

/// A one-connection HTTP server on loopback: it reads one request (head and
/// Content-Length body), answers `reply`, and gives back what it read.
fn serve_once(reply: Vec<u8>) -> (String, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).unwrap();
            got.extend_from_slice(&chunk[..n]);
            if let Some(i) = find(&got, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..i]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap_or(0);
                if got.len() >= i + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        s.write_all(&reply).unwrap();
        got
    });
    (url, handle)
}

#[test]
fn endpoints_parse_to_host_port_and_host_header() {
    let e = Endpoint::parse("https://kms.eu-west-1.amazonaws.com").unwrap();
    assert_eq!((e.https, e.host.as_str(), e.port), (true, "kms.eu-west-1.amazonaws.com", 443));
    assert_eq!(e.url(), "https://kms.eu-west-1.amazonaws.com/");
    let e = Endpoint::parse("http://127.0.0.1:4566/").unwrap();
    assert_eq!(
        (e.https, e.host.as_str(), e.port, e.authority.as_str()),
        (false, "127.0.0.1", 4566, "127.0.0.1:4566")
    );
    let e = Endpoint::parse("http://[::1]:8080").unwrap();
    assert_eq!((e.host.as_str(), e.port, e.authority.as_str()), ("::1", 8080, "[::1]:8080"));
    assert_eq!(Endpoint::parse("http://[::1]").unwrap().port, 80);
    for bad in [
        "kms.example.com",
        "ftp://kms",
        "http://",
        "http://host:0",
        "http://host:99999",
        "http://host:x",
        "http://host/path",
        "http://user@host",
        "http://[::1",
        "http://[::1]x",
        "http://ho st",
    ] {
        assert!(Endpoint::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn settings_are_checked_and_no_secret_is_printed() {
    let creds = || AwsCredentials::new("AKIDKWIRETEST", "very-secret-key").with_session_token("secret-token");
    let options = AwsKmsOptions::new("eu-west-1", creds());
    let printed = format!("{options:?}");
    assert!(!printed.contains("very-secret-key") && !printed.contains("secret-token"), "{printed}");
    assert!(printed.contains("AwsCredentials(..)"), "{printed}");
    let kms = kms("http://127.0.0.1:1", Duration::from_secs(1));
    let printed = format!("{kms:?}");
    assert!(!printed.contains("secret") && !printed.contains("AKID"), "{printed}");
    assert!(printed.contains("http://127.0.0.1:1/") && printed.contains("eu-west-1"), "{printed}");

    let mut o = AwsKmsOptions::new("eu west", creds());
    o.endpoint = Some("http://127.0.0.1:1".into());
    assert!(AwsKms::new(o).is_err());
    let mut o = AwsKmsOptions::new("eu-west-1", AwsCredentials::new("", "x"));
    o.endpoint = Some("http://127.0.0.1:1".into());
    assert!(AwsKms::new(o).is_err());
    let mut o = AwsKmsOptions::new("eu-west-1", creds());
    o.endpoint = Some("https://127.0.0.1:1".into());
    o.ca_file = Some("/nonexistent/ca.pem".into());
    let err = AwsKms::new(o).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    let mut o = AwsKmsOptions::new("eu-west-1", creds());
    o.timeout = Duration::ZERO;
    assert!(AwsKms::new(o).is_err());
}

#[test]
fn service_errors_map_to_kms_errors() {
    let e = |status: u16, body: &str| interpret(answer(status, body), "alias/k").unwrap_err();
    let json = |kind: &str| format!(r#"{{"__type":"{kind}","message":"why"}}"#);
    for kind in [
        "ThrottlingException",
        "KMSInternalException",
        "DependencyTimeoutException",
        "KeyUnavailableException",
    ] {
        assert!(e(400, &json(kind)).is_retriable(), "{kind}");
    }
    assert!(e(503, "").is_retriable());
    assert!(e(500, "<html>oops</html>").is_retriable());
    assert!(e(429, "").is_retriable());
    for kind in [
        "NotFoundException",
        "com.amazonaws.kms#NotFoundException",
        "DisabledException",
        "KMSInvalidStateException",
        "AccessDeniedException",
    ] {
        assert_eq!(e(400, &json(kind)), KmsError::UnknownKey("alias/k".into()), "{kind}");
    }
    assert_eq!(e(400, &json("InvalidCiphertextException")), KmsError::BadWrappedKey);
    assert_eq!(e(400, &json("IncorrectKeyException")), KmsError::BadWrappedKey);
    assert_eq!(e(400, &json("ValidationException")), KmsError::Protocol("ValidationException: why".into()));
    let xml = "<ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch</Code><Message>no\nmatch</Message></Error></Errors></ErrorResponse>";
    assert_eq!(e(403, xml), KmsError::Protocol("SignatureDoesNotMatch: nomatch".into()));
    assert_eq!(e(404, ""), KmsError::Protocol("HTTP 404".into()));
    let long = json(&"x".repeat(1000));
    let KmsError::Protocol(what) = e(400, &long) else { panic!() };
    assert!(what.len() < 2 * MAX_MESSAGE, "{what}");
    assert!(matches!(interpret(answer(200, "[1]"), "k"), Err(KmsError::Protocol(_))));
    assert!(matches!(interpret(answer(200, "{"), "k"), Err(KmsError::Protocol(_))));
}

#[test]
fn answers_are_read_by_length_chunked_or_to_the_end_and_bounded() {
    let read = |bytes: Vec<u8>| {
        run(async move {
            let (mut server, client) = tokio::io::duplex(1 << 20);
            server.write_all(&bytes).await.unwrap();
            drop(server);
            exchange(client, b"").await.map(|a| (a.status, a.body.clone()))
        })
    };
    let ok = |s: &str| read(s.as_bytes().to_vec()).unwrap();
    assert_eq!(ok("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"), (200, b"{}".to_vec()));
    assert_eq!(ok("HTTP/1.1 400 Bad\r\ncontent-length: 3\r\n\r\nabcdef"), (400, b"abc".to_vec()));
    assert_eq!(
        ok(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n1\r\nd\r\n0\r\nT: 1\r\n\r\n"
        ),
        (200, b"abcd".to_vec())
    );
    assert_eq!(ok("HTTP/1.0 200 OK\r\n\r\nto the end"), (200, b"to the end".to_vec()));

    let err = |s: &[u8]| read(s.to_vec()).unwrap_err();
    assert!(err(b"").is_retriable());
    assert!(err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").is_retriable());
    assert!(err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").is_retriable());
    for bad in [
        &b"SSH-2.0\r\n\r\n"[..],
        b"HTTP/1.1 abc\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n",
    ] {
        let e = err(bad);
        assert!(matches!(e, KmsError::Protocol(_)), "{:?}: {e:?}", String::from_utf8_lossy(bad));
    }
    let mut huge_head = b"HTTP/1.1 200 OK\r\n".to_vec();
    huge_head.extend(core::iter::repeat_n(b'a', MAX_HEAD + 10));
    assert!(matches!(err(&huge_head), KmsError::Protocol(_)));
    let mut huge_body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    huge_body.extend(core::iter::repeat_n(b'a', MAX_BODY + 10));
    assert!(matches!(err(&huge_body), KmsError::Protocol(_)));
    let mut many_chunks = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..(MAX_BODY / 1000 + 2) {
        many_chunks.extend_from_slice(b"3e8\r\n");
        many_chunks.extend(core::iter::repeat_n(b'a', 1000));
        many_chunks.extend_from_slice(b"\r\n");
    }
    assert!(matches!(err(&many_chunks), KmsError::Protocol(_)));
    // One byte per chunk, each size line long with an extension: the framing is bounded too.
    let mut long_framing = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let extension = format!("1;{}\r\na\r\n", "x".repeat(1000));
    for _ in 0..(MAX_ANSWER / 1000 + 2) {
        long_framing.extend_from_slice(extension.as_bytes());
    }
    assert!(matches!(err(&long_framing), KmsError::Protocol(why) if why.contains("an answer over")));
}

#[test]
fn a_request_is_signed_with_sigv4_and_a_key_is_read_from_the_answer() {
    let key = [7u8; 32];
    let body = format!(
        r#"{{"KeyId":"arn:k","Plaintext":"{}","CiphertextBlob":"{}"}}"#,
        BASE64.encode(key),
        BASE64.encode(b"wrapped")
    );
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (url, server) = serve_once(reply.into_bytes());
    let kms = kms(&url, Duration::from_secs(5));
    let got = run(kms.generate_data_key("alias/k")).unwrap();
    assert_eq!(got.plain.bytes(), &key);
    assert_eq!(got.wrapped, b"wrapped");
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    let (head, body) = request.split_once("\r\n\r\n").unwrap();
    let head = head.to_lowercase();
    assert!(head.starts_with("post / http/1.1\r\n"), "{head}");
    let authority = url.strip_prefix("http://").unwrap();
    for line in [
        format!("host: {authority}"),
        "content-type: application/x-amz-json-1.1".into(),
        "x-amz-target: trentservice.generatedatakey".into(),
        "x-amz-security-token: secret-token".into(),
        format!("content-length: {}", body.len()),
    ] {
        assert!(head.lines().any(|l| l == line), "{line} not in {head}");
    }
    let auth = head.lines().find_map(|l| l.strip_prefix("authorization: ")).unwrap();
    assert!(auth.starts_with("aws4-hmac-sha256 credential=akidkwiretest/"), "{auth}");
    assert!(auth.contains("/eu-west-1/kms/aws4_request"), "{auth}");
    assert!(
        auth.contains("signedheaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target"),
        "{auth}"
    );
    assert!(!request.contains("very-secret-key"));
    let sent: Value = serde_json::from_str(body).unwrap();
    assert_eq!(sent, serde_json::json!({"KeyId": "alias/k", "KeySpec": "AES_256"}));
}

#[test]
fn decrypt_answers_other_than_a_32_byte_key_are_bad_wrapped_keys() {
    let body = format!(r#"{{"KeyId":"arn:k","Plaintext":"{}"}}"#, BASE64.encode([1u8; 16]));
    let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let (url, server) = serve_once(reply.into_bytes());
    let kms = kms(&url, Duration::from_secs(5));
    assert_eq!(run(kms.unwrap_data_key("k", b"blob")), Err(KmsError::BadWrappedKey));
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    let sent: Value = serde_json::from_str(request.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(sent, serde_json::json!({"CiphertextBlob": BASE64.encode(b"blob"), "KeyId": "k"}));
    // Not sent at all.
    assert_eq!(run(kms.unwrap_data_key("k", b"")), Err(KmsError::BadWrappedKey));
    assert_eq!(run(kms.unwrap_data_key("k", &[0; MAX_WRAPPED + 1])), Err(KmsError::BadWrappedKey));
}

#[test]
fn refused_and_silent_services_are_unavailable() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let kms = kms(&format!("http://127.0.0.1:{port}"), Duration::from_secs(5));
    let err = run(kms.generate_data_key("k")).unwrap_err();
    assert!(err.is_retriable(), "{err}");
    // A service that accepts and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let kms = kms_at(&listener, Duration::from_millis(300));
    let start = std::time::Instant::now();
    let err = run(kms.unwrap_data_key("k", b"blob")).unwrap_err();
    assert!(err.is_retriable() && err.to_string().contains("within"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(3));
    drop(listener);
}

fn kms_at(listener: &TcpListener, timeout: Duration) -> AwsKms {
    kms(&format!("http://{}", listener.local_addr().unwrap()), timeout)
}
