"""The ground truth of what the ROCm libraries declare: an inventory read from the installed headers.

    /usr/include/{hip,rocprim,rocsparse,hipsparse,rocrand,hiprand} ──► clang (libclang, the same clang 15
    that hipcc runs, in HIP mode for gfx90a) ──► one ApiTopic per declaration ──► cached as JSON

A QA answer that names `rocprim::block_scan` or `rocsparse_scsrmv` is checked against this inventory, so it
must be what the compiler sees, not a list typed by hand: each library's umbrella header is parsed the way
hipcc parses it, and every declaration whose location is inside the library's own include folder becomes a
topic: functions, classes and structs with their public members, templates, enums and their enumerators,
typedefs, variables and macros. Each topic keeps its header, a one-line signature and its doc comment; the
overloads of a name share one topic (the first declaration's signature and doc).

What it does not know: declarations that only exist under other macros (another HIP version, the NVIDIA
path of hipSPARSE) and whatever a library defines in a `.cpp` file. `detail` namespaces and names that
start with one underscore are marked internal: they exist, but an answer should not lean on them.

The inventory is cached by a fingerprint of the headers' contents, so a machine with other ROCm packages
builds its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

INVENTORY_VERSION = 3  # bump when the walk changes: the cache key includes it
DEFAULT_INCLUDE_ROOT = Path("/usr/include")
DEBIAN_PACKAGES = "librocprim-dev librocsparse-dev libhipsparse-dev librocrand-dev libhiprand-dev"
_DOC_CHARS = 1200
_SIGNATURE_CHARS = 400


@dataclass(frozen=True)
class LibrarySpec:
    name: str  # "rocprim"
    folder: str  # its folder under the include root
    umbrella: str  # the header that includes the rest
    link: str | None  # the -l name of its shared library; None for header-only (rocPRIM) or the runtime


LIBRARIES: tuple[LibrarySpec, ...] = (
    LibrarySpec("hip", "hip", "hip/hip_runtime.h", None),
    LibrarySpec("rocprim", "rocprim", "rocprim/rocprim.hpp", None),
    LibrarySpec("rocsparse", "rocsparse", "rocsparse/rocsparse.h", "rocsparse"),
    LibrarySpec("hipsparse", "hipsparse", "hipsparse/hipsparse.h", "hipsparse"),
    LibrarySpec("rocrand", "rocrand", "rocrand/rocrand.h", "rocrand"),
    LibrarySpec("hiprand", "hiprand", "hiprand/hiprand.h", "hiprand"),
)
LIBRARY_NAMES: tuple[str, ...] = tuple(library.name for library in LIBRARIES)


@dataclass(frozen=True)
class ApiTopic:
    library: str
    header: str  # relative to the include root: "rocprim/block/block_scan.hpp"
    kind: str  # function, class, template, enum, enumerator, typedef, variable, macro, member, field
    name: str  # qualified: "rocprim::block_scan", "rocprim::block_scan::inclusive_scan", "hipMemcpyAsync"
    signature: str
    doc: str | None
    internal: bool  # in a detail namespace, or a leading single underscore


class InventoryUnavailable(RuntimeError):
    """The headers or libclang are missing: the message says what to install."""


@dataclass(frozen=True)
class ApiInventory:
    topics: tuple[ApiTopic, ...]
    fingerprint: str  # of the headers it was read from
    clang: str  # the libclang it was read with

    @functools.cached_property
    def by_name(self) -> dict[str, ApiTopic]:
        index: dict[str, ApiTopic] = {}
        for topic in self.topics:  # public declarations win over internal ones of the same name
            if topic.name not in index or (index[topic.name].internal and not topic.internal):
                index[topic.name] = topic
        return index

    def lookup(self, name: str) -> ApiTopic | None:
        return self.by_name.get(name)

    def libraries(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for topic in self.topics:
            counts[topic.library] = counts.get(topic.library, 0) + 1
        return counts

    def to_json(self) -> str:
        return json.dumps({"version": INVENTORY_VERSION, "fingerprint": self.fingerprint, "clang": self.clang,
                           "topics": [asdict(topic) for topic in self.topics]})  # fmt: skip

    @staticmethod
    def from_json(text: str) -> ApiInventory:
        data = json.loads(text)
        if data.get("version") != INVENTORY_VERSION:
            raise ValueError(f"inventory version {data.get('version')}, expected {INVENTORY_VERSION}")
        return ApiInventory(
            tuple(ApiTopic(**topic) for topic in data["topics"]), data["fingerprint"], data["clang"]
        )


def headers_fingerprint(include_root: Path = DEFAULT_INCLUDE_ROOT) -> str:
    digest = hashlib.sha256(str(INVENTORY_VERSION).encode())
    for library in LIBRARIES:
        folder = include_root / library.folder
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if path.is_file() and path.suffix in {".h", ".hpp", ".inl"}:
                digest.update(path.relative_to(include_root).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _hip_clang() -> str:
    """The clang++ that hipcc drives (ROCm's own, or Debian's clang-15)."""
    rocm = os.environ.get("ROCM_PATH") or "/opt/rocm"
    for candidate in (f"{rocm}/llvm/bin/clang++", shutil.which("clang++-15"), shutil.which("clang++")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise InventoryUnavailable("no clang++ for HIP: apt-get install hipcc (Debian 12) or install ROCm")


@functools.lru_cache(maxsize=1)
def clang_setup() -> tuple[str, str]:
    """(libclang path, clang resource dir) of hipcc's clang: the inventory parses as the compiler does."""
    clang = _hip_clang()
    resource = subprocess.run(
        [clang, "-print-resource-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    library_dir = Path(resource).parents[1]  # <llvm>/lib/clang/<version> → <llvm>/lib
    chosen = os.environ.get("KV_LIBCLANG") or next(
        (str(path) for pattern in ("libclang.so", "libclang-*.so.1", "libclang.so.*") for path in
         sorted(library_dir.glob(pattern))), None)  # fmt: skip
    if chosen is None:
        raise InventoryUnavailable(
            f"no libclang beside {clang} in {library_dir}: apt-get install libclang1-15"
        )
    return chosen, resource


def _clang_args(resource_dir: str, include_root: Path) -> list[str]:
    # What hipcc passes (HIPCC_VERBOSE=1 shows it), host side only: the declarations are the same on the device.
    return ["-x", "hip", "--cuda-host-only", "--offload-arch=gfx90a", "-std=c++17", "-isystem",
            resource_dir, "--rocm-path=/usr", f"-I{include_root}", "-D__HIP_PLATFORM_AMD__=1",
            "-D__HIP_PLATFORM_HCC__=1", "-Wno-everything",
            "-fretain-comments-from-system-headers"]  # /usr/include is a system folder: keep its doc comments  # fmt: skip


def _one_line(text: str, limit: int) -> str:
    return re.sub(r"\s+", " ", text).strip()[:limit]


def _signature(cursor, kinds) -> str:  # noqa: ANN001 - libclang cursors carry no type hints
    """The declaration up to its body (or the `;`), on one line."""
    if cursor.kind == kinds.MACRO_DEFINITION:
        return _one_line(" ".join(token.spelling for token in cursor.get_tokens()), _SIGNATURE_CHARS)
    if cursor.kind == kinds.ENUM_CONSTANT_DECL:
        return f"{cursor.spelling} = {cursor.enum_value}"
    if cursor.kind in (kinds.FUNCTION_DECL, kinds.CXX_METHOD):  # tokens are empty behind export macros
        arguments = ", ".join(
            f"{item.type.spelling} {item.spelling}".strip() for item in cursor.get_arguments()
        )
        return _one_line(f"{cursor.result_type.spelling} {cursor.spelling}({arguments})", _SIGNATURE_CHARS)
    parts: list[str] = []
    for token in cursor.get_tokens():
        if token.spelling in ("{", ";") and cursor.kind != kinds.TYPEDEF_DECL:
            break
        parts.append(token.spelling)
        if len(parts) > 120:
            break
    return _one_line(" ".join(parts), _SIGNATURE_CHARS)


def _walk(library: LibrarySpec, translation_unit, include_root: Path, cindex) -> Iterator[ApiTopic]:  # noqa: ANN001
    kinds = cindex.CursorKind
    folder = str(include_root / library.folder) + "/"
    descend = {kinds.NAMESPACE, kinds.LINKAGE_SPEC, kinds.UNEXPOSED_DECL}
    recorded = {
        kinds.FUNCTION_DECL: "function", kinds.FUNCTION_TEMPLATE: "template", kinds.CLASS_TEMPLATE: "template",
        kinds.STRUCT_DECL: "class", kinds.CLASS_DECL: "class", kinds.UNION_DECL: "class", kinds.ENUM_DECL: "enum",
        kinds.TYPEDEF_DECL: "typedef", kinds.TYPE_ALIAS_DECL: "typedef", kinds.TYPE_ALIAS_TEMPLATE_DECL: "typedef",
        kinds.VAR_DECL: "variable", kinds.MACRO_DEFINITION: "macro",
    }  # fmt: skip
    members = {kinds.CXX_METHOD: "member", kinds.FUNCTION_TEMPLATE: "member", kinds.FIELD_DECL: "field",
               kinds.TYPEDEF_DECL: "member", kinds.TYPE_ALIAS_DECL: "member", kinds.CONSTRUCTOR: "member",
               kinds.VAR_DECL: "member", kinds.STRUCT_DECL: "class", kinds.CLASS_DECL: "class",
               kinds.CLASS_TEMPLATE: "template", kinds.ENUM_DECL: "enum"}  # fmt: skip
    seen: set[tuple[str, str]] = set()

    def topic(cursor, kind: str, scope: tuple[str, ...]) -> ApiTopic | None:  # noqa: ANN001
        name = cursor.spelling
        if not name or not cursor.location.file or not cursor.location.file.name.startswith(folder):
            return None
        qualified = "::".join((*scope, name))
        if (qualified, kind) in seen:
            return None
        seen.add((qualified, kind))
        internal = any(part in ("detail", "impl") for part in scope) or bool(re.match(r"_[^_]", name))
        header = os.path.relpath(os.path.normpath(cursor.location.file.name), include_root)
        doc = cursor.raw_comment if kind != "macro" else None
        return ApiTopic(library.name, header, kind, qualified, _signature(cursor, kinds),
                        doc[:_DOC_CHARS] if doc else None, internal)  # fmt: skip

    def visit(parent, scope: tuple[str, ...]) -> Iterator[ApiTopic]:  # noqa: ANN001
        for cursor in parent.get_children():
            if cursor.kind in descend:
                inner = (
                    (*scope, cursor.spelling) if cursor.kind == kinds.NAMESPACE and cursor.spelling else scope
                )
                yield from visit(cursor, inner)
                continue
            kind = recorded.get(cursor.kind)
            if kind is None:
                continue
            found = topic(cursor, kind, scope)
            if found is not None:
                yield found
            elif (
                cursor.kind != kinds.ENUM_DECL
            ):  # an anonymous enum (`typedef enum {...} name_t;`) still names its constants
                continue
            if cursor.kind == kinds.ENUM_DECL:
                # C enumerators live in the enclosing scope; a scoped enum's under its own name
                inner = (*scope, cursor.spelling) if cursor.is_scoped_enum() and cursor.spelling else scope
                for constant in cursor.get_children():
                    if constant.kind == kinds.ENUM_CONSTANT_DECL and (
                        item := topic(constant, "enumerator", inner)
                    ):
                        yield item
            elif cursor.kind in (kinds.STRUCT_DECL, kinds.CLASS_DECL, kinds.CLASS_TEMPLATE, kinds.UNION_DECL):
                yield from visit_members(cursor, (*scope, cursor.spelling))

    def visit_members(record, scope: tuple[str, ...]) -> Iterator[ApiTopic]:  # noqa: ANN001
        for cursor in record.get_children():
            kind = members.get(cursor.kind)
            if kind is None or cursor.access_specifier == cindex.AccessSpecifier.PRIVATE:
                continue
            if cursor.access_specifier == cindex.AccessSpecifier.PROTECTED:
                continue
            found = topic(cursor, kind, scope)
            if found is not None:
                yield found
                if kind in ("class", "template") and cursor.kind != kinds.FUNCTION_TEMPLATE:
                    yield from visit_members(cursor, (*scope, cursor.spelling))

    yield from visit(translation_unit.cursor, ())


def read_headers(include_root: Path = DEFAULT_INCLUDE_ROOT) -> ApiInventory:
    """Parse every installed library's umbrella header; raises InventoryUnavailable naming what to install."""
    try:
        from clang import cindex
    except ImportError:
        raise InventoryUnavailable(
            "the ROCm inventory needs libclang's Python bindings: pip install 'clang==15.*'"
        ) from None
    library_path, resource_dir = clang_setup()
    if not cindex.Config.loaded:
        cindex.Config.set_library_file(library_path)
    index = cindex.Index.create()
    options = (cindex.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES
               | cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)  # fmt: skip
    topics: list[ApiTopic] = []
    missing = [library.umbrella for library in LIBRARIES if not (include_root / library.umbrella).is_file()]
    if missing:
        raise InventoryUnavailable(
            f"missing ROCm headers {', '.join(missing)}: apt-get install {DEBIAN_PACKAGES}"
        )
    for library in LIBRARIES:
        source = f"#include <{library.umbrella}>\n"
        if library.name == "rocrand":  # the device API (rocrand_init, rocrand_uniform) has its own umbrella
            source += (
                "#include <rocrand/rocrand_kernel.h>\n#include <rocrand/rocrand.hpp>\n"  # and the C++ API
            )
        if library.name == "hiprand":
            source += "#include <hiprand/hiprand_kernel.h>\n#include <hiprand/hiprand.hpp>\n"
        unit = index.parse("inventory.hip", args=_clang_args(resource_dir, include_root),
                           unsaved_files=[("inventory.hip", source)], options=options)  # fmt: skip
        fatal = [str(item) for item in unit.diagnostics if item.severity >= cindex.Diagnostic.Fatal]
        if fatal:
            raise InventoryUnavailable(f"clang could not read {library.umbrella}: {fatal[0]}")
        topics += _walk(library, unit, include_root, cindex)
    return ApiInventory(tuple(topics), headers_fingerprint(include_root), Path(library_path).name)


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelvault"


def load_inventory(include_root: Path = DEFAULT_INCLUDE_ROOT, cache_dir: Path | None = None) -> ApiInventory:
    """The inventory of the installed headers, from the cache when the headers have not changed."""
    cache = (cache_dir or default_cache_dir()) / f"rocm-inventory-{headers_fingerprint(include_root)}.json"
    if cache.is_file():
        try:
            return ApiInventory.from_json(cache.read_text())
        except (ValueError, KeyError, TypeError):
            pass  # a stale or damaged cache is rebuilt
    inventory = read_headers(include_root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    temporary = cache.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(inventory.to_json())
    temporary.replace(cache)
    return inventory
