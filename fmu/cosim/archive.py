"""Zip archives (FMUs, SSP files) checked before anything is unpacked:
:func:`check_archive` and :func:`safe_extract` (no path traversal, no links, no zip
bombs)."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

__all__ = ["MAX_UNPACKED_BYTES", "check_archive", "safe_extract"]


#: Refuse archives that would unpack to more than this [bytes] (zip bombs).
MAX_UNPACKED_BYTES = 4 << 30


def check_archive(path: str | Path) -> list[str]:
    """Member names of the zip archive ``path`` after checking that each is safe.

    A member is refused when its name is absolute (``/x``, ``C:x``), contains a
    backslash or a ``..`` component, or is a symbolic link, and the archive is refused
    when it unpacks to more than :data:`MAX_UNPACKED_BYTES` or when a member does not
    unpack to what its headers say (sizes or CRC that lie, a truncated or foreign
    compression: every member is read once, within the sizes its headers declare).
    FMUs and SSP files are both zip archives and go through here before anything is
    written to disk.

    Raises
    ------
    ValueError
        Naming the archive and the offending member.
    """
    import stat
    import zipfile

    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a readable zip archive ({e})") from None
    with zf:
        names, total = [], 0
        for info in zf.infolist():
            name = info.filename
            parts = name.split("/")
            if ("\\" in name or name.startswith("/") or ":" in parts[0] or ".." in parts
                    or "\0" in name):
                raise ValueError(f"{path}: unsafe member name {name!r} in the archive "
                                 "(absolute, with '..' or a backslash): refusing to extract")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ValueError(f"{path}: member {name!r} is a symbolic link: refusing to extract")
            total += info.file_size
            names.append(name)
        if total > MAX_UNPACKED_BYTES:
            raise ValueError(f"{path}: unpacks to {total} bytes, more than the limit of "
                             f"{MAX_UNPACKED_BYTES} bytes")
        try:     # within the declared sizes, which were just bounded
            bad = zf.testzip()
        except (OSError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error) as e:
            raise ValueError(f"{path}: not a readable zip archive ({e})") from None
        if bad is not None:
            raise ValueError(f"{path}: member {bad!r} does not unpack to what the archive's "
                             "headers say (its size or CRC-32): a damaged or forged archive")
    return names


def safe_extract(path: str | Path, dest: str | Path | None = None) -> Path:
    """Extract the zip archive ``path`` into ``dest`` (a new temporary folder if None).

    Every member is checked by :func:`check_archive` first, and each target path is
    verified to lie inside ``dest`` before it is written.
    """
    import tempfile
    import zipfile

    check_archive(path)
    dest = Path(tempfile.mkdtemp(prefix="flexcosim-") if dest is None else dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            target = (root / info.filename).resolve()
            if target != root and root not in target.parents:
                raise ValueError(f"{path}: member {info.filename!r} would be written outside "
                                 f"{root}: refusing to extract")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return dest
