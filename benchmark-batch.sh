#!/usr/bin/env bash
# benchmark-batch.sh - see --help; the sweep itself is lib/sweep.sh.
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/sweep.sh" batch "$@"
