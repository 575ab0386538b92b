"""What the search results mask (redaction, envfile.scrub_key): pure functions, no Hermes."""

from __future__ import annotations

import pytest

from project_history_recall.files import envfile
from project_history_recall import redaction

KEY = "sk-proj-Zx81QqLmN0pR7tUvW3yBcD5e"


@pytest.mark.parametrize("pasted, secret, kept", [
    ("key sk-proj-Ab3dEf6hIj9kLm2nOp5q end", "Ab3dEf6hIj9kLm2nOp5q", "sk-[redacted]"),
    ("pat ghp_R8x2Lq9ZmT4vN7wK1pY6sD3fH5jB0cXa.", "R8x2Lq9ZmT4vN7wK1pY6sD3fH5jB0cXa", "ghp_[redacted]."),
    ("aws AKIAJ7Q2XK9LM4PZ8RTW", "J7Q2XK9LM4PZ8RTW", "AKIA[redacted]"),
    ("slack xoxb-2048-7741-Qw8ErTy6UiOp3AsDf", "Qw8ErTy6UiOp3AsDf", "xox[redacted]"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_[redacted]"),
    ("curl -H 'Authorization: Bearer 9fK2mQ7xL4vR8tZ1wN6pB3cY5'", "9fK2mQ7xL4vR8tZ1wN6pB3cY5",
     "Authorization: Bearer [redacted]'"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "Authorization: Basic [redacted]"),
    ("use bearer 9fK2mQ7xL4vR8tZ1wN6pB3cY5 here", "9fK2mQ7xL4vR8tZ1wN6pB3cY5", "bearer [redacted] here"),
    ("x-api-key: q8Lm2Nv7Rt4Wx9Zb1Cd6", "q8Lm2Nv7Rt4Wx9Zb1Cd6", "x-api-key: [redacted]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl", "eyJhbGciOiJIUzI1NiJ9", "jwt [redacted]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1L\n-----END RSA PRIVATE KEY----- ok",
     "MIIEowIBAAKCAQEAu1SU1L", "[redacted private key] ok"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA (pasted half)", "b3BlbnNzaC1rZXktdjEAAAA",
     "[redacted private key]"),
    ("db postgres://app:Sup3rS3cretPw@db.internal:5432/shop", "Sup3rS3cretPw", "postgres://app:[redacted]@db"),
    ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
     "123456789:[redacted]"),
    ("git remote add origin https://deploy:Gx9tok3nQ2zz@github.com/org/app.git", "Gx9tok3nQ2zz",
     "https://deploy:[redacted]@github.com/org/app.git"),
    ("export OPENAI_API_KEY=Lk93jdHq02PzXv7YwRt5", "Lk93jdHq02PzXv7YwRt5", "OPENAI_API_KEY=[redacted]"),
    ("GH_TOKEN = 'Lk93jdHq02PzXv7YwRt5' # ci", "Lk93jdHq02PzXv7YwRt5", "GH_TOKEN = '[redacted]' # ci"),
    ('DB_PASSWORD="correct-horse-battery"', "correct-horse-battery", 'DB_PASSWORD="[redacted]"'),
    ('{"api_key": "Lk93jdHq02PzXv7YwRt5", "model": "m"}', "Lk93jdHq02PzXv7YwRt5",
     '{"api_key": "[redacted]", "model": "m"}'),
    ("token consent-abcdefghijklmnopqrstuvwxyz234567 old", "abcdefghijklmnopqrstuvwxyz234567", "consent-[redacted] old"),
    ("token consent-" + "a2" * 24, "a2" * 24, "consent-[redacted]"),
    # ~/.aws/credentials and what `aws sts` prints: the secret, the temporary key and its session token
    ("[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kLm9RtX\n",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kLm9RtX", "aws_secret_access_key = [redacted]\n"),
    ("aws_access_key_id = ASIAQ7XK2LM4PZ8RTWJ5", "Q7XK2LM4PZ8RTWJ5", "= ASIA[redacted]"),
    ("aws_session_token=FwoGZXIvYXdzEJr9Qk2LmT7xWz4NbR8vYc1HdJ6sPq3Ue5Kf0Ag//+=", "FwoGZXIvYXdzEJr9Qk2LmT7x",
     "aws_session_token=[redacted]"),
    ('"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kLm9RtX",', "wJalrXUtnFEMI/K7MDENG",
     '"SecretAccessKey": "[redacted]",'),
    ('"SessionToken": "FwoGZXIvYXdzEJr9Qk2LmT7xWz4NbR8vYc1HdJ6sPq3Ue5Kf0Ag"', "FwoGZXIvYXdzEJr9Qk2LmT7x",
     '"SessionToken": "[redacted]"'),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXq3ZkBCADk7vQm9hTz2LpW4xRn8\n=Ab3x\n"
     "-----END PGP PRIVATE KEY BLOCK----- ok", "lQOYBGXq3ZkBCADk7vQm9hTz2LpW4xRn8", "[redacted private key] ok"),
    ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5qkMDwP\n-----END EC PRIVATE KEY-----",
     "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5qkMDwP", "[redacted private key]"),
    ("hook https://hooks.slack.com/services/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 done",
     "Xq8LmN2pR7tUvW3yBcD5eF6g", "https://hooks.slack.com/services/[redacted] done"),
    ("gitlab glpat-Xq8LmN2pR7tUvW3yBcD5 and glptt-0123456789abcdef0123456789abcdef01234567",
     "Xq8LmN2pR7tUvW3yBcD5", "glpat-[redacted] and glptt-[redacted]"),
    ("AccountName=shop;AccountKey=" + "Zm9vYmFyYmF6cXV4" * 5 + "Zm9vYmE=;EndpointSuffix=core.windows.net",
     "Zm9vYmFyYmF6cXV4", "AccountKey=[redacted];EndpointSuffix"),
    ("curl -s -u deploy:Hq7Lx2Vd9Rk4 https://ci.example.com/api", "Hq7Lx2Vd9Rk4", "-u deploy:[redacted] https"),
    ("curl https://ci.example.com/api \\\n  --user 'deploy:Hq7Lx2Vd9Rk4' -X POST", "Hq7Lx2Vd9Rk4",
     "--user 'deploy:[redacted]' -X POST"),
])
def test_secret_shapes_are_masked_and_only_the_vendor_prefix_kept(pasted, secret, kept):
    masked = redaction.mask(pasted)
    assert secret not in masked and secret[:8] not in masked, masked
    assert kept in masked, masked


@pytest.mark.parametrize("text", [
    "a risk-free, task-oriented plan; we ask-questions-first",
    "MAX_TOKENS=4096 and TOKEN_LIMIT = 120000",
    "OPENAI_API_KEY=os.getenv('OPENAI_API_KEY') or API_TOKEN=${API_TOKEN} or SECRET=<your secret here>",
    "the bearer of bad news; Bearer tokens expire; Authorization: none",
    "postgres://localhost/shop and https://example.com/a?b=c and https://host:443/users/@alice",
    "keyword_candidates = KEYWORD_CANDIDATES_FOR_SEARCH; x = y",
    '{"max_tokens": 512, "token_result": {"status": "rejected"}}',
    "sk-learn is not a key, nor is ghp_ or AKIA alone",
    "支付回调超时 token=短",
    "curl -u $USER:$PASS https://x and curl -u admin https://y and curl -u '${U}:${P}' z",
    "aws_secret_access_key = os.environ['AWS_SECRET'] in ASIA and ASIAN markets; AccountKey=<your key>",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQENBGXq3ZkBCADk7vQm9hTz2Lp\n-----END PGP PUBLIC KEY BLOCK-----",
    "see https://hooks.slack.com/services for webhooks; gitlab tokens start with glpat-",
])
def test_ordinary_project_talk_is_left_alone(text):
    assert redaction.mask(text) == text


def test_any_long_piece_of_the_configured_key_is_masked():
    assert redaction.mask(f"is {KEY}!", KEY) == "is [redacted]!"
    # broken by a line, cut in half, or marked in the middle: every run of 8+ characters goes
    assert KEY[:12] not in redaction.mask(f"{KEY[:12]}\n{KEY[12:]}", KEY)
    assert envfile.scrub_key(f"a sk->>>proj<<<-{KEY[8:]} b", KEY) == "a sk->>>proj<<<[redacted] b"
    assert envfile.scrub_key(f"x {KEY[3:11]} y {KEY[3:10]} z", KEY) == f"x [redacted] y {KEY[3:10]} z"
    # a key without a known shape (a self-hosted service) is masked by its pieces alone
    own = "Q7hT2xLp9RkV4mWn"
    assert redaction.mask(f"halves {own[:8]}, {own[8:]}", own) == "halves [redacted], [redacted]"
    # too short to be a key: never masks ordinary words
    assert envfile.scrub_key("the cat sat", "cat") == "the cat sat"


def test_masking_is_stable():
    text = f"{KEY} ghp_R8x2Lq9ZmT4vN7wK1pY6sD3fH5jB0cXa Authorization: Bearer 9fK2mQ7xL4vR8tZ1wN6pB3cY5"
    once = redaction.mask(text, KEY)
    assert redaction.mask(once, KEY) == once
