#!/bin/bash
# Arguments with spaces, quotes, $(), globs, backslashes and newlines reach
# the worker byte for byte: through srun (node mode) and from a batch script.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
cat > dump.py <<'P'
import json, os, sys
with open(os.path.join(os.environ["OUT"], "argv-%s.json" % os.environ["RANK"]), "w") as f:
    json.dump(sys.argv[1:], f)
P
args=("a b" "it's" '"dq"' '$(touch /tmp/ctrun-pwned)' $'line1\nline2' '*' '' ';ls' 'back\slash' '	tab')
"$PY" -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${args[@]}" > expected.json
rm -f /tmp/ctrun-pwned

compare() {
	local f
	[ -n "$(ls argv-*.json 2>/dev/null)" ] || fail "$1: no rank reported"
	for f in argv-*.json; do
		"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a!=b)' \
			expected.json "$f" || fail "$1: $f differs: $(cat "$f")"
	done
	assert_eq 4 "$(ls argv-*.json | wc -l)" "$1: ranks that reported"
	[ ! -e /tmp/ctrun-pwned ] || fail "$1: a shell evaluated an argument"
	rm -f argv-*.json
}
node_mode() {
	run_rc env OUT="$TMPD" srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 --python "$PY" dump.py "${args[@]}"
	assert_eq 0 "$rc" "srun exit status"
	compare "node mode"
}

# The batch script holds the arguments as a bash array, quoted by bash itself.
batch_mode() {
	{ printf '#!/bin/bash\nexport OUT=%q\n' "$TMPD"; printf 'args=('; printf '%q ' "${args[@]}"; printf ')\n'
	  printf '%q --nproc-per-node 2 --python %q %q "${args[@]}"\n' "$CTRUN" "$PY" "$TMPD/dump.py"; } > job.sh
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/job.out" job.sh
	cat job.out
	assert_eq 0 "$rc" "sbatch exit status"
	compare "batch mode"
}

behaviour "node mode (srun): every argument byte for byte, none evaluated" node_mode
behaviour "batch mode: every argument byte for byte, none evaluated" batch_mode
