"""Option parsing per program, the way GNU getopt_long reads a command line.

Rules must see what the program will see: ``sort --co=sh`` is
``--compress-program=sh``, ``sort --out=F`` is ``--output=F``, ``tree -Co F`` is
``-C -o F`` and ``date -us @0`` is ``-u --set=@0``. :func:`normalise` rewrites an
argument list into one canonical spelling (long names where the program has one,
values attached with ``=``; short options without a long name stay ``-x`` followed by
their value word), or refuses it: unknown or ambiguous options, and computed words
that could turn into options, are never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .shell_words import Word

__all__ = ["SPECS", "OptionSpec", "normalise", "positional"]

# Arity of a long option: no value, a required value, an optional value (=VALUE only).
FLAG, VALUE, OPTIONAL = 0, 1, 2
_SAFE_START = re.compile(r"^[A-Za-z0-9_./~+@%,:=^\u0080-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """A program's options: ``short`` in getopt syntax (``x:`` takes a value,
    ``x::`` an optional attached value); ``long`` maps names to their arity;
    ``alias`` maps short letters to the canonical long name rules use."""

    short: str
    long: Mapping[str, int]
    alias: Mapping[str, str] = field(default_factory=dict)
    digits: bool = False  # -NUM is an option (uniq -2, head -5)

    def short_arity(self, letter: str) -> int | None:
        at = self.short.find(letter)
        if at < 0 or letter == ":":
            return None
        if self.short[at + 1 : at + 3] == "::":
            return OPTIONAL
        return VALUE if self.short[at + 1 : at + 2] == ":" else FLAG


def _fixed_prefix(w: Word) -> bool:
    """Whether a computed word's start, and so whether it is an option, is fixed.

    A glob can only expand to names sharing its literal start (``*.py`` may still
    match a planted ``--file=x.py``: the rules check what globs match); an option
    whose value holds the glob keeps its name (``--include=*.py``).
    """
    t = w.text
    if w.glob and not w.expansion and not w.substitution:
        if not t.startswith("-"):
            return True
        first = min((t.find(c) for c in "*?[" if c in t), default=len(t))
        return t.startswith("--") and 0 <= t.find("=") < first
    return not t.startswith("-") and _SAFE_START.match(t) is not None


def _long(spec: OptionSpec, option: str) -> tuple[str, int] | str:
    """The full long name ``option`` (without ``--``) stands for, or why not."""
    if option in spec.long:
        return option, spec.long[option]
    matches = sorted(n for n in spec.long if n.startswith(option))
    if not matches:
        return f"--{option} is not an option this program is known to take"
    if len({spec.long[m] for m in matches}) > 1 or len(matches) > 1:
        return f"--{option} is ambiguous ({', '.join('--' + m for m in matches)})"
    return matches[0], spec.long[matches[0]]


def _joined(name: str, value: Word) -> Word:
    return Word(
        f"--{name}={value.text}",
        literal=value.literal,
        quoted=value.quoted,
        glob=value.glob,
        expansion=value.expansion,
        substitution=value.substitution,
    )


def normalise(spec: OptionSpec, args: Sequence[Word]) -> list[Word] | str:
    """``args`` in canonical spelling, options first, then ``--`` and the operands.

    Returns a reason (a string) when the line cannot be read with certainty.
    """
    options: list[Word] = []
    operands: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        i += 1
        if not w.literal and not w.pipe and not _fixed_prefix(w):
            return f"the computed argument {t!r} could turn into an option"
        if w.pipe or t == "-" or not t.startswith("-"):
            operands.append(w)
            continue
        if t == "--":
            for rest in args[i:]:
                if not rest.literal and not rest.pipe and not _fixed_prefix(rest):
                    return f"the computed argument {rest.text!r} cannot be checked in advance"
            operands.extend(args[i:])
            break
        if t.startswith("--"):
            option, eq, value = t[2:].partition("=")
            found = _long(spec, option)
            if isinstance(found, str):
                return found
            name, arity = found
            if eq and arity == FLAG:
                return f"--{name} takes no value"
            if arity == VALUE and not eq:
                if i >= len(args):
                    return f"--{name} needs a value"
                options.append(_joined(name, args[i]))
                i += 1
            elif eq:
                options.append(_joined(name, Word(value, literal=w.literal, glob=w.glob)))
            else:
                options.append(Word(f"--{name}"))
            continue
        if spec.digits and t[1:].isdigit():
            options.append(Word(t))
            continue
        pos = 1
        while pos < len(t):
            letter = t[pos]
            takes = spec.short_arity(letter)
            if takes is None:
                return f"-{letter} is not an option this program is known to take"
            canon = spec.alias.get(letter)
            attached = t[pos + 1 :]
            if takes == FLAG:
                options.append(Word(f"--{canon}" if canon else f"-{letter}"))
                pos += 1
                continue
            if attached:
                given = Word(attached, literal=w.literal, glob=w.glob)
            elif takes == VALUE:
                if i >= len(args):
                    return f"-{letter} needs a value"
                given = args[i]
                i += 1
            else:
                options.append(Word(f"--{canon}" if canon else f"-{letter}"))
                break
            if canon:
                options.append(_joined(canon, given))
            else:
                options.extend([Word(f"-{letter}"), given])
            break
    return [*options, Word("--"), *operands]


def positional(canonical: Sequence[Word]) -> list[Word]:
    """The operands of a line :func:`normalise` gave: every word after its first ``--``
    (a short option's value may stand alone before it, as in ``-f 1``)."""
    for i, w in enumerate(canonical):
        if w.text == "--":
            return list(canonical[i + 1 :])
    return []


def _names(text: str, arity: int = FLAG) -> dict[str, int]:
    return dict.fromkeys(text.split(), arity)


def _alias(text: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in text.split())


_HELP = _names("help version")

SPECS: dict[str, OptionSpec] = {
    "sort": OptionSpec(
        short="bcCdfghik:mMno:rRsS:t:T:uVz",
        long={
            **_HELP,
            **_names(
                "ignore-leading-blanks dictionary-order debug ignore-case general-numeric-sort"
                " human-numeric-sort ignore-nonprinting merge month-sort numeric-sort reverse"
                " random-sort stable unique version-sort zero-terminated"
            ),
            **_names(
                "files0-from field-separator key output random-source sort buffer-size"
                " temporary-directory parallel batch-size compress-program",
                VALUE,
            ),
            "check": OPTIONAL,
        },
        alias=_alias(
            "b=ignore-leading-blanks c=check C=check d=dictionary-order f=ignore-case "
            "g=general-numeric-sort h=human-numeric-sort i=ignore-nonprinting k=key "
            "m=merge M=month-sort n=numeric-sort o=output r=reverse R=random-sort "
            "s=stable S=buffer-size t=field-separator T=temporary-directory u=unique "
            "V=version-sort z=zero-terminated"
        ),
    ),
    "tree": OptionSpec(
        short="adlfxL:RP:I:o:iqNQpugshDFvtcUrCASnXJH:T:",
        long={
            **_HELP,
            **_names(
                "si du prune dirsfirst filesfirst noreport fromfile fromtabfile gitignore info"
                " ignore-case matchdirs metafirst nolinks inodes device opt-toggle hyperlink"
                " fflinks condense"
            ),
            **_names(
                "filelimit timefmt charset gitfile infofile hintro houtro sort scheme authority",
                VALUE,
            ),
        },
        alias=_alias("o=output"),
    ),
    "date": OptionSpec(
        short="d:f:I::r:Rs:u",
        long={
            **_HELP,
            **_names("debug resolution rfc-email rfc-2822 utc universal"),
            **_names("date file reference set rfc-3339", VALUE),
            "iso-8601": OPTIONAL,
        },
        alias=_alias("d=date f=file I=iso-8601 r=reference R=rfc-email s=set u=utc"),
    ),
    "uniq": OptionSpec(
        short="cdDf:is:uw:z",
        long={
            **_HELP,
            **_names("count repeated ignore-case unique zero-terminated"),
            **_names("skip-fields skip-chars check-chars", VALUE),
            **dict.fromkeys(("all-repeated", "group"), OPTIONAL),
        },
        digits=True,
    ),
    "du": OptionSpec(
        short="abB:cd:DHhkLlmPsSt:xX:0",
        long={
            **_HELP,
            **_names(
                "null all apparent-size bytes total dereference-args human-readable inodes"
                " dereference count-links no-dereference separate-dirs si summarize"
                " one-file-system"
            ),
            **_names(
                "block-size max-depth files0-from threshold time-style exclude-from exclude",
                VALUE,
            ),
            "time": OPTIONAL,
        },
        alias=_alias("L=dereference X=exclude-from D=dereference-args"),
    ),
    "wc": OptionSpec(
        short="cmlLw",
        long={
            **_HELP,
            **_names("bytes chars lines max-line-length words"),
            **_names("files0-from total", VALUE),
        },
    ),
    "file": OptionSpec(
        short="bcCdEe:F:f:hikKlLm:nNpP:rsSvzZ0",
        long={
            **_HELP,
            **_names(
                "apple brief checking-printout compile debug extension keep-going list mime"
                " mime-type mime-encoding no-dereference dereference no-buffer no-pad"
                " preserve-date raw special-files no-sandbox uncompress uncompress-noreport"
                " print0"
            ),
            **_names("exclude exclude-quiet files-from separator magic-file parameter", VALUE),
        },
        alias=_alias("C=compile f=files-from m=magic-file p=preserve-date"),
    ),
    "diff": OptionSpec(
        short="abBcC:dD:eEfF:iI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ",
        long={
            **_HELP,
            **_names(
                "normal brief report-identical-files ed rcs side-by-side left-column"
                " suppress-common-lines show-c-function expand-tabs initial-tab"
                " suppress-blank-empty recursive no-dereference new-file"
                " unidirectional-new-file ignore-file-name-case no-ignore-file-name-case"
                " ignore-case ignore-tab-expansion ignore-trailing-space ignore-space-change"
                " ignore-all-space ignore-blank-lines text strip-trailing-cr minimal"
                " speed-large-files paginate forward-ed"
            ),
            **_names(
                "ifdef show-function-line label width tabsize exclude exclude-from"
                " starting-file from-file to-file ignore-matching-lines line-format"
                " old-line-format new-line-format unchanged-line-format old-group-format"
                " new-group-format unchanged-group-format changed-group-format horizon-lines"
                " palette",
                VALUE,
            ),
            **dict.fromkeys(("context", "unified", "color"), OPTIONAL),
        },
        alias=_alias(
            "r=recursive N=new-file x=exclude X=exclude-from S=starting-file D=ifdef l=paginate"
        ),
    ),
    "grep": OptionSpec(
        short="A:B:C:D:EFGIPHLRTUVZabcd:e:f:him:nloqrsuvwxyz",
        long={
            **_HELP,
            **_names(
                "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case"
                " no-ignore-case word-regexp line-regexp null-data no-messages invert-match"
                " byte-offset line-number line-buffered with-filename no-filename"
                " only-matching quiet silent text recursive dereference-recursive"
                " files-without-match files-with-matches count initial-tab null binary"
                " no-group-separator"
            ),
            **_names(
                "regexp file max-count label binary-files directories devices include"
                " exclude exclude-from exclude-dir before-context after-context context"
                " group-separator",
                VALUE,
            ),
            **dict.fromkeys(("color", "colour"), OPTIONAL),
        },
        alias=_alias(
            "e=regexp f=file R=dereference-recursive r=recursive d=directories D=devices "
            "m=max-count"
        ),
        digits=True,
    ),
    **{
        name: OptionSpec(
            short="bctwz",
            long={
                **_HELP,
                **_names("binary check tag text zero ignore-missing quiet status strict warn"),
            },
            alias=_alias("c=check"),
        )
        for name in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")
    },
    "base64": OptionSpec(
        short="diw:",
        long={**_HELP, **_names("decode ignore-garbage"), "wrap": VALUE},
    ),
}
SPECS["egrep"] = SPECS["grep"]
SPECS["fgrep"] = SPECS["grep"]
