#!/usr/bin/env bash
# check-readme.sh - run the README's shell commands, in order, in a fresh
# clone, so that a README that drifts from the code fails CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    cat <<USAGE
Usage: $0 [options]

Clones this repository's HEAD into a temporary directory and runs, in
order, every command of README.md's \`\`\`sh blocks in one bash (set -euo
pipefail), as a new user would type them there. Blocks fenced as \`\`\`text,
\`\`\`go or plain \`\`\` are not run: the convention for README authors is
that a \`\`\`sh block must run as written on one machine, in the order
given, and anything else (a cluster's command, a template with
placeholders) goes in \`\`\`text. The Go example is compiled and run by
client/example_test.go instead.

It fails when a command fails, when the whole takes longer than --limit,
or when the commands leave a file git does not ignore (what the examples
make belongs under an ignored directory such as demo/).

To keep it to a few minutes, two commands are run shorter, and say so:
  go test ./...        as go test -count=1 -run '^\$' ./... (every test
                       compiled, none run; CI runs them in its own step)
  ./run-cluster.sh     with BATCHKV_CLIENT_ARGS="-secs SECS -records 100000"
                       (appended to its client_args: a shorter load)

Options (defaults in brackets):
  --file FILE       the Markdown file to check [README.md]
  --port-shift N    add N to every port 8080-8099 in the commands, and
                    give run-cluster.sh --port 8080+N, so that the run
                    stays clear of other servers on this machine [0]
  --secs S          seconds of load of each run-cluster.sh run [3]
  --limit S         seconds the commands may take in all [600]
  --list            print the commands it would run, and exit
  --keep            keep the temporary clone (its path is printed)
  --self-test       show that the check fails on planted faults: a
                    failing command, a stray file; and passes a \`\`\`text
                    block that would fail
  -h, --help        this help
USAGE
}

FILE=README.md
SHIFT=0
SECS=3
LIMIT=600
LIST=0
KEEP=0
SELF_TEST=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help|-help) usage; exit 0 ;;
        --file) FILE="${2:?--file needs a file}"; shift 2 ;;
        --port-shift) SHIFT="${2:?--port-shift needs a number}"; shift 2 ;;
        --secs) SECS="${2:?--secs needs seconds}"; shift 2 ;;
        --limit) LIMIT="${2:?--limit needs seconds}"; shift 2 ;;
        --list) LIST=1; shift ;;
        --keep) KEEP=1; shift ;;
        --self-test) SELF_TEST=1; shift ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$SHIFT" "$SECS" "$LIMIT"; do
    if ! [[ $n =~ ^[0-9]+$ ]]; then echo "--port-shift, --secs and --limit take whole numbers" >&2; exit 2; fi
done

# Temporary directories, removed on exit.
TEMPS=()
remove_temps() {
    local d
    for d in "${TEMPS[@]+"${TEMPS[@]}"}"; do rm -rf "$d"; done
}
trap remove_temps EXIT

# extract FILE: print "LINE<TAB>COMMAND" for every line of its ```sh
# blocks (blank lines and comment-only lines skipped; a line ending in a
# backslash is joined with the next).
extract() {
    awk '
        /^```/ { if (inblock) { inblock = 0; next } if ($0 ~ /^```sh[[:space:]]*$/) { inblock = 1 } next }
        !inblock { next }
        cont != "" { line = $0; sub(/^[[:space:]]+/, "", line); cont = cont " " line
                     if (cont ~ /\\$/) { sub(/[[:space:]]*\\$/, "", cont) } else { print start "\t" cont; cont = "" }
                     next }
        /^[[:space:]]*(#|$)/ { next }
        /\\$/ { cont = $0; sub(/[[:space:]]*\\$/, "", cont); start = NR; next }
        { print NR "\t" $0 }
    ' "$1"
}

# rewrite CMD: the command as run here (ports shifted, runs shortened).
rewrite() {
    local cmd=$1
    if (( SHIFT )); then
        cmd=$(perl -pe "s/(?<![0-9.])(80[89][0-9])(?![0-9])/\$1+$SHIFT/ge" <<< "$cmd")
        if [[ $cmd == *./run-cluster.sh* && $cmd != *--port* && $cmd != *--help* ]]; then
            cmd=${cmd//.\/run-cluster.sh/.\/run-cluster.sh --port $((8080 + SHIFT))}
        fi
    fi
    if [[ $cmd =~ ^go\ test\ \./\.\.\.([[:space:]]|$) ]]; then
        cmd="go test -count=1 -run '^\$' ./...${cmd#go test ./...}"
    fi
    printf '%s\n' "$cmd"
}

# check FILE REPO: run FILE's commands in a fresh clone of REPO; returns
# non-zero with the reason on stderr when the check fails.
check() {
    local file=$1 repo=$2 work script
    work=$(mktemp -d /tmp/check-readme.XXXXXX)
    if (( KEEP )); then echo "clone kept in $work/repo"; else TEMPS+=("$work"); fi
    git clone -q "$repo" "$work/repo"
    script="$work/commands.sh"
    {
        echo 'set -euo pipefail'
        # Whatever the commands left running in the background is stopped.
        # shellcheck disable=SC2016 # expanded by the generated script
        echo 'trap '\''kids=$(jobs -p); if [[ -n $kids ]]; then kill $kids 2>/dev/null || true; fi'\'' EXIT'
        echo "export BATCHKV_CLIENT_ARGS=$(printf '%q' "-secs $SECS -records 100000")"
        while IFS=$'\t' read -r line cmd; do
            cmd=$(rewrite "$cmd")
            printf 'echo %q\n' "== $(basename "$file"):$line: $cmd"
            printf '%s\n' "$cmd"
        done < <(extract "$file")
    } > "$script"
    local start=$SECONDS status=0
    (cd "$work/repo" && timeout --kill-after=10 "$LIMIT" bash "$script") || status=$?
    if (( status == 124 || status == 137 )); then
        echo "check-readme: the commands took longer than ${LIMIT}s" >&2
        return 1
    elif (( status )); then
        echo "check-readme: a command of $(basename "$file") failed (exit $status): the last '==' line above" >&2
        return 1
    fi
    local stray
    stray=$(cd "$work/repo" && git status --porcelain --untracked-files=all)
    if [[ -n $stray ]]; then
        echo "check-readme: the commands left files git does not ignore (put them under an ignored directory):" >&2
        echo "$stray" | head -n 20 >&2
        return 1
    fi
    echo "check-readme: every command of $(basename "$file")'s sh blocks ran, in $((SECONDS - start))s"
}

# self_test: the check must fail a README with a failing command and one
# that leaves a stray file, and pass one whose failing command is in a
# text block.
self_test() {
    local dir repo
    dir=$(mktemp -d /tmp/check-readme-self.XXXXXX)
    TEMPS+=("$dir")
    repo="$dir/repo"
    git init -q "$repo"
    git -C "$repo" -c user.email=t@t -c user.name=t commit -q --allow-empty -m empty
    local fence='```'
    # shellcheck disable=SC2016 # a command for the planted README, not expanded here
    printf '# ok\n\n%ssh\necho one\ntest "$(echo a \\\n  b)" = "a b"\n%s\n\n%stext\nfalse\n%s\n' "$fence" "$fence" "$fence" "$fence" > "$dir/ok.md"
    printf '# fails\n\n%ssh\necho one\nfalse\necho never\n%s\n' "$fence" "$fence" > "$dir/fails.md"
    printf '# stray\n\n%ssh\ntouch stray.txt\n%s\n' "$fence" "$fence" > "$dir/stray.md"
    check "$dir/ok.md" "$repo" || { echo "self-test: a README whose commands pass failed the check" >&2; return 1; }
    local shift_was=$SHIFT
    SHIFT=100
    printf '# port\n\n%ssh\ntest "127.0.0.1:8081" = 127.0.0.1:8181\n%s\n' "$fence" "$fence" > "$dir/port.md"
    check "$dir/port.md" "$repo" || { echo "self-test: ports were not shifted as asked" >&2; return 1; }
    SHIFT=$shift_was
    if check "$dir/fails.md" "$repo" 2>/dev/null; then echo "self-test: a failing command passed the check" >&2; return 1; fi
    if check "$dir/stray.md" "$repo" 2>/dev/null; then echo "self-test: a stray file passed the check" >&2; return 1; fi
    echo "check-readme self-test: a failing command and a stray file are caught; a text block is not run"
}

if (( SELF_TEST )); then
    self_test
    exit
fi
if [[ $FILE != /* ]]; then FILE="$ROOT/$FILE"; fi
if [[ ! -r $FILE ]]; then echo "--file $FILE: no such readable file" >&2; exit 2; fi
if (( LIST )); then
    while IFS=$'\t' read -r line cmd; do printf '%s:%s: %s\n' "$(basename "$FILE")" "$line" "$(rewrite "$cmd")"; done < <(extract "$FILE")
    exit 0
fi
if [[ -n $(git -C "$ROOT" status --porcelain -- "$FILE") ]]; then
    echo "check-readme: note: $FILE has uncommitted changes: its commands are read from the working copy, the code is HEAD's" >&2
fi
echo "check-readme: $FILE's sh blocks in a clone of HEAD; ports shifted by $SHIFT, run-cluster.sh loads of ${SECS}s, at most ${LIMIT}s"
check "$FILE" "$ROOT"
