"""Markdown that cannot act: the one place where board and report text becomes Markdown
or HTML.

Board text (a question, a hypothesis, an evidence description, a verdict, a value from
the user's data) and the reporter's Markdown are written by a model reading data that
anyone may have filled. Whatever a notebook, nbconvert, GitHub or a browser does with
them, opening the output must not load or run anything. The rule, for every surface:

- **no HTML**: raw HTML in a report is shown as text;
- **no images**: a Markdown image becomes the text ``[image: alt — url]``, so opening a
  report never sends a request (a data value ``![x](http://server/leak.png)`` would);
- **links only to http, https or mailto**: any other link (``javascript:``, ``data:``,
  ``file:``, relative) becomes its text followed by the target as text; a kept link
  loads nothing until clicked;
- **no math**: ``$`` is literal, so no MathJax command runs.

:func:`escape_markdown` makes board text literal inside Markdown the code writes
(tables, headers); :func:`safe_markdown` keeps a report's own structure (headings,
lists, tables, emphasis, code) and re-emits it with every active part made text;
:func:`markdown_html` renders the same rule to HTML. Built on mistune (a dependency,
the Markdown parser nbconvert itself uses), whose syntax tree lets each rule hold on
the parsed element rather than on a spelling. A leaf module: it imports nothing of
d2_notebook, so every layer may use it.
"""

from __future__ import annotations

import re
from html import escape as escape_html
from html import unescape as unescape_html
from typing import Any
from urllib.parse import quote, unquote

import mistune
from mistune.renderers.html import HTMLRenderer
from mistune.renderers.markdown import MarkdownRenderer

LINK_SCHEMES: tuple[str, ...] = ("http:", "https:", "mailto:")
"""The only link targets kept as links (compared lower-case, after trimming)."""

_PLUGINS = ["table", "strikethrough"]
_INLINE_ACTIVE = re.compile(r"([\\`*_\[\]<>!&|~$])")
_ASCII_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")
_URL_SAFE = "/:?#[]@!$&'*+,;=%~-._"


def escape_markdown(text: str) -> str:
    """``text`` as literal inline Markdown: shown exactly as written, never as markup.

    Line breaks become spaces (board text goes into one line or table cell), and every
    character with a meaning in inline Markdown or HTML (`` \\ ` * _ [ ] < > ! & | ~ $ ``)
    is backslash-escaped, which CommonMark, GitHub, JupyterLab and nbconvert all read
    as the character itself.
    """
    return _INLINE_ACTIVE.sub(r"\\\1", _LINE_BREAKS.sub(" ", text))


def safe_markdown(markdown: str) -> str:
    """A report's Markdown, its structure kept and every part that could act made text
    (see the module docstring for the rule)."""
    render = mistune.create_markdown(renderer=_SafeMarkdownRenderer(), plugins=_PLUGINS)
    return str(render(markdown)).rstrip("\n") + "\n"


def markdown_html(markdown: str) -> str:
    """Markdown rendered to an HTML fragment under the same rule: raw HTML escaped,
    images as text, links only to http, https or mailto (``rel="noopener noreferrer
    nofollow"``)."""
    render = mistune.create_markdown(renderer=_SafeHTMLRenderer(escape=True),
                                     plugins=_PLUGINS)
    return str(render(markdown))


def link_target(url: str) -> str | None:
    """``url`` trimmed if it may be a link (http, https or mailto, no control
    characters or spaces), else None."""
    trimmed = url.strip()
    if not trimmed.lower().startswith(LINK_SCHEMES):
        return None
    if any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in trimmed):
        return None
    return trimmed


def image_text(alt: str, url: str) -> str:
    """What an image shows instead of itself: its description and where it points."""
    alt = alt.strip()
    return f"[image: {alt} — {url}]" if alt else f"[image: {url}]"


class _SafeMarkdownRenderer(MarkdownRenderer):
    """mistune's Markdown re-emitter with text escaped and images, HTML, unsafe links
    and reference definitions turned into text."""

    def text(self, token: dict[str, Any], state: Any) -> str:
        return _INLINE_ACTIVE.sub(r"\\\1", token["raw"])

    def image(self, token: dict[str, Any], state: Any) -> str:
        alt = _plain_text(token.get("children", []))
        return escape_markdown(image_text(alt, token["attrs"]["url"]))

    def link(self, token: dict[str, Any], state: Any) -> str:
        text = self.render_children(token, state)
        url = token["attrs"]["url"]
        target = link_target(url)
        if target is None:
            label = _plain_text(token.get("children", []))
            return text if _says_target(label, url) else f"{text} ({escape_markdown(url)})"
        return f"[{text}]({quote(target, safe=_URL_SAFE)})"

    def inline_html(self, token: dict[str, Any], state: Any) -> str:
        return escape_markdown(token["raw"])

    def block_html(self, token: dict[str, Any], state: Any) -> str:
        lines = token["raw"].strip("\n").split("\n")
        return "  \n".join(_ASCII_PUNCTUATION.sub(r"\\\1", line) for line in lines) + "\n\n"

    def render_referrences(self, state: Any) -> list[str]:
        return []


class _SafeHTMLRenderer(HTMLRenderer):
    """mistune's HTML renderer (raw HTML escaped) with images as text and links only to
    http, https or mailto."""

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return escape_html(image_text(unescape_html(_strip_tags(text)), url))

    def link(self, text: str, url: str, title: str | None = None) -> str:
        target = link_target(url)
        if target is None:
            label = unescape_html(_strip_tags(text))
            return text if _says_target(label, url) else f"{text} ({escape_html(url)})"
        return (f'<a href="{escape_html(target, quote=True)}" '
                f'rel="noopener noreferrer nofollow">{text}</a>')


def _says_target(label: str, url: str) -> bool:
    """Whether a link's text already shows where it points (an autolink), or it points
    nowhere: then the target is not repeated after it."""
    return not url or label.strip() in {url, unquote(url)}


def _plain_text(tokens: list[dict[str, Any]]) -> str:
    """The text inside inline tokens (an image's description), markup dropped."""
    parts = []
    for token in tokens:
        if "raw" in token:
            parts.append(token["raw"])
        parts.append(_plain_text(token.get("children", [])))
    return "".join(parts)


def _strip_tags(html: str) -> str:
    """Rendered inline HTML back to its (still escaped) text."""
    return re.sub(r"<[^>]*>", "", html)
