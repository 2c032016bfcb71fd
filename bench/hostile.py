"""Hostile messages for the cost bounds (issue 7 item 12, issue 11 item 4), built in memory.

Each builder returns raw bytes of a message that once took seconds of CPU or hundreds of MB:
a 760 KB Subject, 50,000 encoded words, deeply nested multiparts, nested HTML, a 23 MB body of
"wrote:" lines, a 30 MB quoted-printable body, a 25 MB attachment behind a short reply.
Used by bench/classify_cost.py (numbers) and tests/adversarial (generous bounds).
"""

from __future__ import annotations

import base64

MB = 1_000_000
_HEAD = (
    b"From: Jana Schmidt <jana@kunde.example>\r\nTo: max@sales.example\r\n"
    b"Date: Mon, 15 Jul 2024 10:05:00 +0200\r\nMessage-ID: <hostile@kunde.example>\r\n"
    b"MIME-Version: 1.0\r\n"
)


def huge_subject(size: int = 760_000) -> bytes:
    return _HEAD + b"Subject: " + b"Re: offer " * (size // 10) + b"\r\n\r\nYes, call me.\r\n"


def encoded_words(count: int = 50_000) -> bytes:
    word = b"=?utf-8?b?" + base64.b64encode("Grüße".encode()) + b"?="
    return _HEAD + b"Subject: " + b" ".join([word] * count) + b"\r\n\r\nHello\r\n"


def nested_multipart(depth: int = 2_000) -> bytes:
    out = [_HEAD + b"Subject: nested\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n"]
    for i in range(1, depth):
        out.append(f"--b{i - 1}\r\nContent-Type: multipart/mixed; boundary=b{i}\r\n\r\n".encode())
    out.append(f"--b{depth - 1}\r\nContent-Type: text/plain\r\n\r\nHello\r\n".encode())
    return b"".join(out)


def nested_html(depth: int = 100_000) -> bytes:
    html = b"<div>" * depth + b"Yes, Thursday works." + b"</div>" * depth
    return _HEAD + b"Subject: Re: offer\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html


def wrote_lines(size: int = 23 * MB) -> bytes:
    line = b"On Mon, Jul 15, 2024 at 9:58 AM Max <max@sales.example> wrote:\r\n"
    return _HEAD + b"Subject: Re: offer\r\n\r\n" + line * (size // len(line))


def quoted_printable(size: int = 30 * MB) -> bytes:
    line = b"=C3=A9t=C3=A9 =3D caf=C3=A9 " * 2 + b"=\r\n"
    return (
        _HEAD
        + b"Subject: Re: offer\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
        + line * (size // len(line))
    )


def big_attachment(size: int = 25 * MB) -> bytes:
    data = base64.encodebytes(b"\0" * (size * 3 // 4))
    return (
        _HEAD
        + b"Subject: Re: offer\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\n"
        + b"Content-Type: text/plain\r\n\r\nYes, Thursday works. Deck attached.\r\n--XX\r\n"
        + b"Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + data
        + b"\r\n--XX--\r\n"
    )


HOSTILE = {
    "subject_760kb": huge_subject,
    "encoded_words_50k": encoded_words,
    "nested_multipart_2000": nested_multipart,
    "nested_html_100k": nested_html,
    "wrote_lines_23mb": wrote_lines,
    "quoted_printable_30mb": quoted_printable,
    "attachment_25mb": big_attachment,
}
