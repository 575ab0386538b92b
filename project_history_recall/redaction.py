"""Secrets in the searched history, masked before any of it is shown.

People paste keys into chats, and Hermes keeps every tool result, consent
tokens included. A search shows pieces of that history: a snippet cut around
the first match with the matches marked, neighbouring messages cut to a few
hundred characters, a session's title. Each piece is masked with ``MARGIN``
characters to spare on either side before it is cut to size or marked (see
results.py).

Masked in every result, whichever embedder is configured (a key a user
pasted is as secret as the one the plugin uses):

- credential shapes Hermes itself masks in tool output (``agent/redact.py``):
  vendor prefixes (``sk-``, ``ghp_``, ``xoxb-``, ``AKIA``…), Authorization
  and API-key headers, bearer tokens, JWTs, private key blocks, passwords in
  URLs (``user:password@``), Telegram bot tokens, secret-named assignments
  (``STRIPE_SECRET=…``) and JSON fields (``"api_key": "…"``);
- shapes Hermes does not mask, as gitleaks' rules find them (see ``_GITLEAKS_SHAPES``): AWS
  temporary keys (``ASIA…``) and the secrets of an AWS credentials file or ``aws sts`` output,
  GitLab tokens (``glpat-…``), Slack webhook URLs, PGP private key blocks, Azure storage
  ``AccountKey=`` and the password of ``curl -u user:password``;
- this plugin's consent tokens;
- the configured remote embedder's key, and any run of 8 or more of its
  characters (``envfile.scrub_key``).

A mask shows nothing of the secret, at most the vendor's prefix
(``ghp_[redacted]``), so a reader still learns what kind of credential was
there. Phone numbers and lower-case ``password=…`` prose, which Hermes also
masks in logs, are left alone: they are not credentials a search must hide,
and masking them would blank ordinary project talk.
"""

from __future__ import annotations

import re
import string

from .files import envfile

MASK = envfile.MASK
# The shape of this plugin's consent tokens (semantic.consent_tokens issues them), kept here because
# masking sits below the consent gate: it needs the shape, nothing else of consent.
CONSENT_TOKEN_PREFIX = "consent-"
CONSENT_TOKEN = re.compile(re.escape(CONSENT_TOKEN_PREFIX) + r"[a-z2-7]{32,}")
# Longer than any secret masked here, so a piece cut this much wider than what is shown masks
# every secret that reaches into what is shown (results.py): a PEM private key of RSA-8192,
# the longest credential people paste, is ~6,400 characters.
MARGIN = 8192

# Hermes's list of vendor key shapes (agent/redact.py, 0.19.0), kept in step by hand:
# importing it would tie the plugin to a private name of one Hermes release.
_VENDOR_SHAPES = (
    r"sk-[A-Za-z0-9_-]{10,}", r"ghp_[A-Za-z0-9]{10,}", r"github_pat_[A-Za-z0-9_]{10,}", r"gho_[A-Za-z0-9]{10,}",
    r"ghu_[A-Za-z0-9]{10,}", r"ghs_[A-Za-z0-9]{10,}", r"ghr_[A-Za-z0-9]{10,}", r"xapp-\d+-[A-Za-z0-9-]{10,}",
    r"xox[baprs]-[A-Za-z0-9-]{10,}", r"AIza[A-Za-z0-9_-]{30,}", r"pplx-[A-Za-z0-9]{10,}", r"fal_[A-Za-z0-9_-]{10,}",
    r"fc-[A-Za-z0-9]{10,}", r"bb_live_[A-Za-z0-9_-]{10,}", r"gAAAA[A-Za-z0-9_=-]{20,}", r"AKIA[A-Z0-9]{16}",
    r"sk_live_[A-Za-z0-9]{10,}", r"sk_test_[A-Za-z0-9]{10,}", r"rk_live_[A-Za-z0-9]{10,}", r"SG\.[A-Za-z0-9_-]{10,}",
    r"hf_[A-Za-z0-9]{10,}", r"r8_[A-Za-z0-9]{10,}", r"npm_[A-Za-z0-9]{10,}", r"pypi-[A-Za-z0-9_-]{10,}",
    r"dop_v1_[A-Za-z0-9]{10,}", r"doo_v1_[A-Za-z0-9]{10,}", r"am_[A-Za-z0-9_-]{10,}", r"sk_[A-Za-z0-9_]{10,}",
    r"tvly-[A-Za-z0-9]{10,}", r"exa_[A-Za-z0-9]{10,}", r"gsk_[A-Za-z0-9]{10,}", r"syt_[A-Za-z0-9]{10,}",
    r"retaindb_[A-Za-z0-9]{10,}", r"hsk-[A-Za-z0-9]{10,}", r"mem0_[A-Za-z0-9]{10,}", r"brv_[A-Za-z0-9]{10,}",
    r"xai-[A-Za-z0-9]{30,}", r"ntn_[A-Za-z0-9]{10,}", r"fw-[A-Za-z0-9]{30,}", r"fw_[A-Za-z0-9]{30,}",
    r"fpk_[A-Za-z0-9]{30,}",
)
# Shapes Hermes leaves alone, written after gitleaks' rules of the same name (github.com/gitleaks/
# gitleaks, cmd/generate/config/rules/*.go): a maintained set, but Go source and TOML that no Python
# package ships. detect-secrets (PyPI) has detectors for most of them, but no release since 1.5.0
# (May 2024), none for curl -u or session tokens, and its patterns come as parts of a file scanner.
# aws-access-token: the prefixes of temporary (STS) and other AWS access key ids besides AKIA.
# gitlab-pat, -ptt, -deploy-token, -runner-authentication-token, -cicd-job-token, -feed-token,
# -incoming-mail-token, -kubernetes-agent-token, -oauth-app-secret, -scim-token, -feature-flag-token.
_GITLEAKS_SHAPES = (
    r"ASIA[A-Z0-9]{16}", r"ABIA[A-Z0-9]{16}", r"ACCA[A-Z0-9]{16}",
    r"glpat-[A-Za-z0-9_-]{20,}", r"glptt-[A-Za-z0-9_-]{20,}", r"gldt-[A-Za-z0-9_-]{20,}",
    r"glrt-[A-Za-z0-9_-]{20,}", r"glcbt-[A-Za-z0-9_-]{20,}", r"glft-[A-Za-z0-9_-]{20,}",
    r"glimt-[A-Za-z0-9_-]{20,}", r"glagent-[A-Za-z0-9_-]{50,}", r"gloas-[A-Za-z0-9_-]{20,}",
    r"glsoat-[A-Za-z0-9_-]{20,}", r"glffct-[A-Za-z0-9_-]{20,}",
)
_SHAPES = _VENDOR_SHAPES + _GITLEAKS_SHAPES
_VENDOR = re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(_SHAPES) + r")(?![A-Za-z0-9_-])")
# The literal start of each shape: the label a mask keeps, longest first so sk_live_ wins over sk_.
_LITERAL_START = re.compile(r"[A-Za-z0-9_-]*")  # matches every string, if only with ""
_LABELS = sorted({_LITERAL_START.match(s).group(0) for s in _SHAPES}, key=len, reverse=True)  # type: ignore[union-attr]

# A credential is one run of 8 or more characters after the header (and its scheme word, if any).
_AUTH_HEADER = re.compile(r"((?:Proxy-)?Authorization\s*:\s*(?:[A-Za-z][\w.+-]*\s+)?)[^\s\"']{8,}",
                          re.IGNORECASE)
_KEY_HEADER = re.compile(
    r"((?:x-api-key|x-goog-api-key|api-key|apikey|x-api-token|x-auth-token|x-access-token)\s*:\s*)[^\s\"']+",
    re.IGNORECASE)
# "Bearer" in prose ("the bearer of bad news") is followed by words: a credential is long and has a digit.
_BEARER = re.compile(r"(\bBearer\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_=-]{4,}){0,2}")
# A block pasted without its END line is masked to the end of the message. PGP's is a "PRIVATE KEY
# BLOCK" (gitleaks' private-key rule).
_PRIVATE_KEY = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                          r"(?:-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")
# The password of user:password@ in a URL of any scheme (Hermes masks it in database URLs, and keeps
# web URLs whole for the agent to follow, which a search result is never for).
_URL_PASSWORD = re.compile(r"(://[^:\s/@]+:)[^@\s/]+(?=@)")
_TELEGRAM = re.compile(r"(?<!\d)(\d{8,}:)[-A-Za-z0-9_]{30,}")
# gitleaks' aws-secret-access-key looks for a 40-character secret near "aws"; named, as in
# ~/.aws/credentials (aws_secret_access_key = …, aws_session_token = …) and `aws sts` JSON
# ("SecretAccessKey": "…", "SessionToken": "…"), the session token is caught too.
_AWS_NAMED = re.compile(r"((?:aws_?)?(?:secret_?access_?key|session_?token|security_?token)['\"]?\s*[:=]\s*['\"]?)"
                        r"[A-Za-z0-9/+=]{16,}", re.IGNORECASE)
# gitleaks' slack-webhook-url: the whole path after the kind is the credential.
_SLACK_WEBHOOK = re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/]{43,}")
# An Azure storage (or Service Bus) connection string's key (detect-secrets' AzureStorageKeyDetector).
_AZURE_KEY = re.compile(r"((?:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/=]{20,}", re.IGNORECASE)
# gitleaks' curl-auth-user: the password of -u/--user user:password in a curl command (_curl_mask
# looks back for "curl": a pattern that starts at every "curl" and scans on for the flag costs a
# pass over the line per "curl"). A variable ($PASS, ${P}) or a <placeholder> is left alone.
_CURL_USER = re.compile(r"(\s(?:-u|--user)(?:=|[ \t]{0,5})['\"]?[^\s:'\"]*:)(?![$<\[{])[^\s'\"]{3,}")
_CURL = re.compile(r"\bcurl\b")
_CURL_REACH = 1000  # how far back a command's "curl" may be, its continuation lines included
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH")
# The value of NAME=value, where an upper-case NAME says it is a secret (_assignment_mask looks back
# for the name: a pattern that starts at every name would cost a regex pass per character). Values
# naming where a secret comes from (os.getenv("X"), ${X}, <your key>) are code, and short or
# all-digit ones (MAX_TOKENS=4096) are settings.
_ASSIGNMENT = re.compile(r"=[ \t]*(['\"]?)(?!os\.|process\.env|\$|<|%)(?!\d+\b)[^\s'\"]{8,}(?=\1)")
_NAME_CHARS = frozenset(string.ascii_uppercase + string.digits + "_")
_JSON_FIELD = re.compile(
    r'("(?:api_?key|token|secret|password|passwd|access_token|refresh_token|auth_token|id_token|bearer|'
    r'client_secret|private_key|secret_key)"\s*:\s*")(?!os\.|process\.env|\$)[^"]+(?=")', re.IGNORECASE)


def _assignment_mask(match: re.Match) -> str:
    text, end = match.string, match.start()
    while end and text[end - 1] in " \t":
        end -= 1
    start = end
    while start and text[start - 1] in _NAME_CHARS:
        start -= 1
    if start and (text[start - 1].isalnum() or text[start - 1] == "_") or not _SECRET_NAME.search(text[start:end]):
        return match.group(0)
    return match.group(0)[: match.end(1) - match.start()] + MASK


def _curl_mask(match: re.Match) -> str:
    text, end = match.string, match.start()
    floor = max(0, end - _CURL_REACH)
    start = text.rfind("\n", floor, end)
    while start > floor and text[start - 1] == "\\":  # a continuation line: its command began above
        start = text.rfind("\n", floor, start - 1)
    start = max(start, floor)
    # find() first: most flags have no "curl" before them, and it skips ahead far faster than \\b.
    if text.find("curl", start, end) < 0 or not _CURL.search(text, start, end):
        return match.group(0)
    return match.group(1) + MASK


def _vendor_mask(match: re.Match) -> str:
    token = match.group(0)
    return next((label for label in _LABELS if token.startswith(label)), "") + MASK


# (pattern, the mask, words one of which a message must hold for the pattern to be tried). Looking
# for the words is one cheap pass (the vendor pattern costs ~45 µs on a line of Chinese, a search for
# its prefixes a few), and most messages hold none of them.
_RULES = (
    (_PRIVATE_KEY, lambda m: "[redacted private key]", ("-----BEGIN",)),
    (_VENDOR, _vendor_mask, tuple(_LABELS)),
    (_TELEGRAM, lambda m: m.group(1) + MASK, (":",)),
    (CONSENT_TOKEN, lambda m: CONSENT_TOKEN_PREFIX + MASK, (CONSENT_TOKEN_PREFIX,)),
    (_JWT, lambda m: MASK, ("eyJ",)),
    (_AUTH_HEADER, lambda m: m.group(1) + MASK, ("authorization",)),
    (_KEY_HEADER, lambda m: m.group(1) + MASK, ("api-key", "apikey", "-token")),
    (_BEARER, lambda m: m.group(1) + MASK, ("bearer",)),
    (_URL_PASSWORD, lambda m: m.group(1) + MASK, ("://",)),
    (_ASSIGNMENT, _assignment_mask, ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH")),
    (_JSON_FIELD, lambda m: m.group(1) + MASK, ('key"', 'token"', 'secret"', "passw", 'bearer"')),
    (_AWS_NAMED, lambda m: m.group(1) + MASK, ("accesskey", "access_key", "token")),
    (_SLACK_WEBHOOK, lambda m: m.group(1) + MASK, ("hooks.slack.com/",)),
    (_AZURE_KEY, lambda m: m.group(1) + MASK, ("accountkey=", "sharedaccesskey=")),
    (_CURL_USER, _curl_mask, ("curl",)),
)
# Whether each rule's words are looked up in the lower-cased message (read once: flag arithmetic
# on re's enum costs more than the lookups).
_FOLDED = tuple(bool(pattern.flags & re.IGNORECASE) for pattern, _, _ in _RULES)
# Every vendor key and bot token is a run of 12+ key characters: one cheap scan rules most text out.
_KEY_RUN = re.compile(r"[A-Za-z0-9_-]{12}")
# The words of every other rule, in one pattern for the message as it is and one for it lower-cased:
# a message without a key run and without any of them is let through after two scans (~10 µs a
# message where asking each rule took ~13 µs, about a fifth of a millisecond a search).
_KEYED = (_VENDOR, _TELEGRAM)


def _any_word(folded: bool) -> re.Pattern:
    return re.compile("|".join(re.escape(word) for i, (pattern, _, words) in enumerate(_RULES)
                               if _FOLDED[i] == folded and pattern not in _KEYED for word in words))


_ANY_WORD, _ANY_FOLDED_WORD = _any_word(False), _any_word(True)


def _may_hold(index: int, text: str, lowered: str, key_run: bool) -> bool:
    pattern, _, words = _RULES[index]
    if pattern in _KEYED:
        if not key_run:
            return False
        if pattern is _TELEGRAM:
            return ":" in text
    haystack = lowered if _FOLDED[index] else text
    return any(word in haystack for word in words)


def mask(text: str, key: str | None = None) -> str:
    """``text`` with every secret it holds masked; ``key`` is the configured embedder's key."""
    if not text:
        return text
    text = envfile.scrub_key(text, key)
    lowered = text.lower()
    key_run = bool(_KEY_RUN.search(text))
    if not key_run and not _ANY_WORD.search(text) and not _ANY_FOLDED_WORD.search(lowered):
        return text
    for i, (pattern, masked, _words) in enumerate(_RULES):
        if _may_hold(i, text, lowered, key_run):
            text = pattern.sub(masked, text)
    return text


class Masked:
    """What one response shows, masked with the configured embedder's key."""

    def __init__(self, key: str | None):
        self.key = key

    def text(self, text: str) -> str:
        return mask(text, self.key)
