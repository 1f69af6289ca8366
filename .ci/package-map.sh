#!/usr/bin/env bash
# Checks docs/architecture.md's package map against the code: every package
# that `go list ./...` finds has a row, every row names a package that
# exists, and no package imports one of its own layer or a higher one (so
# there is no import cycle and no arrow back up the layers). Test imports
# are not checked: a package's tests may use any package.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: .ci/package-map.sh [--doc FILE] [--self-test]

Compares the "## Package map" table of docs/architecture.md (rows of the
form | `pkg` | layer | what it is |) with `go list ./...` and each
package's imports. On a mismatch it prints what to change, e.g. the row
to add for a new package, and exits 1.

  --doc FILE    the document holding the map (default: docs/architecture.md)
  --self-test   plant drifts (a package missing from the map, a row for no
                package, an import against the layers) and show that each
                is caught; exits 1 if one is not
  -h, --help    this help
EOF
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
doc=docs/architecture.md
self_test=false
while (($#)); do
    case $1 in
        --doc) doc=${2:?--doc needs a file}; shift 2 ;;
        --self-test) self_test=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "package-map.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

module=$(go list -m)

# map_rows DOC: "pkg layer" for every row of the package map's table.
map_rows() {
    awk '
        /^## / { inmap = ($0 == "## Package map"); next }
        inmap && /^\| `/ {
            n = split($0, col, "|")
            pkg = col[2]; layer = col[3]
            gsub(/[ `]/, "", pkg); gsub(/ /, "", layer)
            if (n < 4 || layer !~ /^[0-9]+$/) {
                printf "BADROW %s\n", $0
                next
            }
            print pkg, layer
        }' "$1"
}

# import_graph [go list flags]: "pkg dep dep ..." for every package of the
# module, its non-test imports of the module's own packages only, paths
# relative to the module.
import_graph() {
    go list "$@" -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... |
        awk -v m="$module/" '{
            line = substr($1, length(m) + 1)
            for (i = 2; i <= NF; i++)
                if (index($i, m) == 1) line = line " " substr($i, length(m) + 1)
            print line
        }'
}

# check ROWS GRAPH DOC: prints every disagreement; exits 1 if there is one.
check() {
    awk -v doc="$3" '
        FNR == NR {
            if ($1 == "BADROW") {
                sub(/^BADROW /, "")
                printf "%s: a package map row without a layer number: %s\n", doc, $0
                bad = 1
                next
            }
            if ($1 in layer) { printf "%s: package %s has two rows in the package map\n", doc, $1; bad = 1 }
            layer[$1] = $2 + 0
            next
        }
        {
            pkg = $1
            seen[pkg] = 1
            if (!(pkg in layer)) {
                # The lowest layer it may sit in: one above its highest import.
                want = 0; top = ""
                for (i = 2; i <= NF; i++)
                    if (($i in layer) && layer[$i] + 1 > want) { want = layer[$i] + 1; top = $i }
                why = top == "" ? "it imports no package of this module" : "one above its highest import, " top
                printf "%s: package %s is missing from the package map; add this row to the table under \"## Package map\" (layer %d: %s), saying what it is:\n| `%s` | %d | ... |\n", doc, pkg, want, why, pkg, want
                bad = 1
                next
            }
            for (i = 2; i <= NF; i++) {
                dep = $i
                if ((dep in layer) && layer[dep] >= layer[pkg]) {
                    printf "%s: %s (layer %d) imports %s (layer %d): a package may import only lower layers; move the code, or change the layers in the package map\n", doc, pkg, layer[pkg], dep, layer[dep]
                    bad = 1
                }
            }
        }
        END {
            for (pkg in layer)
                if (!(pkg in seen)) {
                    printf "%s: the package map has a row for %s, which `go list ./...` does not find; remove the row\n", doc, pkg
                    bad = 1
                }
            exit bad
        }' "$1" "$2"
}

# run DOC [go list flags]: the whole check.
run() {
    local doc=$1 rows graph status=0
    shift
    rows=$(mktemp)
    graph=$(mktemp)
    map_rows "$doc" > "$rows"
    import_graph "$@" > "$graph"
    check "$rows" "$graph" "$doc" || status=$?
    rm -f "$rows" "$graph"
    return "$status"
}

if ! $self_test; then
    if run "$doc"; then
        echo "package map: $(wc -l < <(map_rows "$doc")) packages in $doc match go list ./..., every import points down the layers"
        exit 0
    fi
    exit 1
fi

# --self-test: each planted drift must fail the check, naming what drifted.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
expect_fail() { # NAME PATTERN DOC [go list flags]
    local name=$1 pattern=$2 pdoc=$3 out
    shift 3
    if out=$(run "$pdoc" "$@" 2>&1); then
        echo "self-test: $name: NOT caught (the check passed)" >&2
        failures=$((failures + 1))
    elif ! grep -qF -- "$pattern" <<< "$out"; then
        echo "self-test: $name: failed without naming it; output: $out" >&2
        failures=$((failures + 1))
    else
        echo "self-test: $name: caught: $(grep -F -- "$pattern" <<< "$out" | head -n 1)"
    fi
}

echo "self-test: the check passes on the tree as it is"
run "$doc" || { echo "self-test: the unplanted tree fails the check; fix that first" >&2; exit 1; }

bt='`' # markdown's code quote, around each package name in the map
# A package missing from the map: the row of ring deleted.
grep -v "^| ${bt}ring${bt} |" "$doc" > "$tmp/no-ring.md"
expect_fail "row of ring deleted" "package ring is missing from the package map" "$tmp/no-ring.md"

# A row for a package that does not exist.
sed "s/^| ${bt}wire${bt} |/| ${bt}gone${bt} | 0 | a package that was removed |\n&/" "$doc" > "$tmp/extra.md"
expect_fail "row for a missing package" "has a row for gone" "$tmp/extra.md"

# A new package the map does not know, added through go list's overlay (no
# file is written in the tree).
mkdir -p "$tmp/src"
printf 'package zzplanted\n\nimport _ "%s/wire"\n' "$module" > "$tmp/src/zz.go"
printf '{"Replace": {"%s/internal/zzplanted/zz.go": "%s/src/zz.go"}}\n' "$PWD" "$tmp" > "$tmp/new-package.json"
expect_fail "new package internal/zzplanted" "| ${bt}internal/zzplanted${bt} | 1 | ... |" "$doc" -overlay "$tmp/new-package.json"

# An import up the layers: kvs/store (layer 1) importing client (layer 3).
printf 'package store\n\nimport _ "%s/client"\n' "$module" > "$tmp/src/up.go"
printf '{"Replace": {"%s/kvs/store/zz_planted_up.go": "%s/src/up.go"}}\n' "$PWD" "$tmp" > "$tmp/up.json"
expect_fail "kvs/store importing client" "kvs/store (layer 1) imports client (layer 3)" "$doc" -overlay "$tmp/up.json"

# An import across a layer: wire and ring are both layer 0.
printf 'package ring\n\nimport _ "%s/wire"\n' "$module" > "$tmp/src/across.go"
printf '{"Replace": {"%s/ring/zz_planted_across.go": "%s/src/across.go"}}\n' "$PWD" "$tmp" > "$tmp/across.json"
expect_fail "ring importing wire (same layer)" "ring (layer 0) imports wire (layer 0)" "$doc" -overlay "$tmp/across.json"

if ((failures)); then
    echo "self-test: $failures planted drift(s) not caught" >&2
    exit 1
fi
echo "self-test: every planted drift caught"
