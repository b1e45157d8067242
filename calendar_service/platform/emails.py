r"""Email addresses: the one rule for an address the service takes, wherever it takes one (an
owner, ``users``; an event's attendees, ``events.people``, the REST API, MCP and an imported
file's; free/busy sharing, ``sharing``), and the form SMTP takes.

``check_email`` is the rule: a string, without NUL (``inputs.check_text``), at most
``EMAIL_MAX`` characters, that ``email-validator`` takes (syntax only, no DNS; strict: at most
64 characters before the ``@``) — so no quoted local part, no IP literal, no trailing dot, no
two dots in a row, no special-use domain such as ``.test`` or ``.local`` — and whose domain
is no look-alike (below). It answers the address normalized: trimmed, the domain lower-case
and Unicode (IDNA ``xn--`` labels decoded, NFC); the local part as given (an owner's and a
share's are kept wholly lower-case, ``users``, ``sharing``). ``mail_address`` is the form SMTP
takes (the domain in IDNA ASCII).

Look-alike domains: a domain label that mixes scripts (``exаmple`` with a Cyrillic ``а``) is
refused, as UTS #39 (Unicode Security Mechanisms, §5.2) restricts identifiers to its "Highly
Restrictive" level:

- each label of the domain is checked on its own (``пример.com`` is two labels of one script
  each, and fine);
- a label's letters must all be of one script (``münchen``, ``пример``), their characters'
  Script_Extensions (so a character shared by scripts counts for each), ignoring characters
  of the Common and Inherited scripts (digits, ``-``, combining marks);
- or of one of the combinations that Japanese, Chinese and Korean write with: Latin, Han,
  Hiragana and Katakana; Latin, Han and Bopomofo; Latin, Han and Hangul.

Which script a character is of is the ``regex`` module's (``\p{scx=…}``, its Unicode
version); ``_SCRIPTS`` only names the scripts to ask it about. ASCII domains are Latin and
Common and cost nothing. ``mixed_scripts`` says what is wrong, in a sentence naming the
scripts and the characters of the fewer ones.
"""

from __future__ import annotations

import functools
from typing import Any

import idna
import regex
from email_validator import EmailNotValidError, validate_email

from calendar_service.platform.errors import FieldError
from calendar_service.platform.inputs import check_text

EMAIL_MAX = 320


def check_email(value: Any, field: str, errors: list[FieldError]) -> str | None:
    """The email address ``value`` as kept (normalized), or ``None`` with the reason in
    ``errors`` (on ``field``, as the caller named it)."""
    if not isinstance(value, str) or not value.strip():
        errors.append(FieldError(field, "must be an email address"))
        return None
    nul = check_text(field, value)
    if nul:
        errors.extend(nul)
        return None
    if len(value) > EMAIL_MAX:
        errors.append(FieldError(field, f"must be at most {EMAIL_MAX} characters"))
        return None
    try:
        checked = validate_email(value.strip(), check_deliverability=False, strict=True)
    except EmailNotValidError as exc:
        errors.append(FieldError(field, f"is not a valid email address ({exc})"))
        return None
    mixed = mixed_scripts(checked.domain)
    if mixed is not None:
        errors.append(FieldError(field, mixed))
        return None
    return str(checked.normalized)


def mail_address(email: str) -> str:
    """``email`` as SMTP takes it: the domain in IDNA ASCII."""
    local, _, domain = email.rpartition("@")
    try:
        ascii_domain = idna.encode(domain, uts46=True).decode("ascii")
    except idna.IDNAError:
        ascii_domain = domain
    return f"{local}@{ascii_domain}"


# Unicode's scripts (long names) but Common, Inherited and Unknown, which never mix.
_SCRIPTS = (  # noqa: SIM905 (as a list literal: 175 lines)
    "Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak "
    "Bengali Beria_Erfe Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal "
    "Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Coptic Cuneiform Cypriot "
    "Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs "
    "Elbasan Elymaic Ethiopic Garay Georgian Glagolitic Gothic Grantha Greek Gujarati "
    "Gunjala_Gondi Gurmukhi Gurung_Khema Hangul Han Hanifi_Rohingya Hanunoo Hatran Hebrew "
    "Hiragana Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Javanese Jurchen "
    "Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki "
    "Khudawadi Kirat_Rai Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani "
    "Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek "
    "Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani "
    "Myanmar Nabataean Nag_Mundari Nandinagari Newa New_Tai_Lue Nko Nushu "
    "Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian "
    "Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Ol_Onal Oriya "
    "Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Proto_Cuneiform "
    "Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Seal Sharada Shavian Siddham Sidetic "
    "SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Sunuwar Syloti_Nagri Syriac "
    "Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Tai_Yo Takri Tamil Tangsa Tangut Telugu Thaana "
    "Thai Tibetan Tifinagh Tirhuta Todhri Tolong_Siki Toto Tulu_Tigalari Ugaritic Vai "
    "Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square "
).split()

_PATTERNS = tuple(
    (name.replace("_", " "), regex.compile(rf"\p{{scx={name}}}")) for name in _SCRIPTS
)
# UTS #39's "Highly Restrictive" combinations besides a single script.
_ALLOWED = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)


@functools.lru_cache(maxsize=4096)
def scripts_of(char: str) -> frozenset[str]:
    """The scripts ``char`` is written in (its Script_Extensions); empty for Common and
    Inherited characters (digits, punctuation, combining marks)."""
    if char.isascii():
        return frozenset({"Latin"}) if char.isalpha() else frozenset()
    return frozenset(name for name, pattern in _PATTERNS if pattern.match(char))


def mixed_scripts(domain: str) -> str | None:
    """Why ``domain`` (Unicode, as ``email-validator`` normalizes it) is a look-alike, or
    ``None`` when each of its labels keeps to one script or an allowed combination."""
    if domain.isascii():
        return None
    for label in domain.split("."):
        found = [(c, scripts_of(c)) for c in dict.fromkeys(label) if scripts_of(c)]
        if not found:
            continue
        if frozenset.intersection(*(s for _, s in found)):
            continue  # one script in common to every letter
        if any(all(s & allowed for _, s in found) for allowed in _ALLOWED):
            continue
        return _saying(label, found)
    return None


def _saying(label: str, found: list[tuple[str, frozenset[str]]]) -> str:
    count: dict[str, int] = {}
    for char in label:
        for script in scripts_of(char):
            count[script] = count.get(script, 0) + 1
    ranked = sorted(count, key=lambda s: (-count[s], s))
    main = ranked[0]
    others = [
        s for s in ranked[1:] if any(s in scripts and main not in scripts for _, scripts in found)
    ]
    odd = [c for c, scripts in found if main not in scripts]
    scripts = [main, *others]
    named = (
        " and ".join(scripts)
        if len(scripts) < 3
        else ", ".join(scripts[:-1]) + " and " + scripts[-1]
    )
    chars = ", ".join(f"{c} U+{ord(c):04X}" for c in odd[:10])
    return f"the domain mixes {named} letters ({chars}): a look-alike of another address"
