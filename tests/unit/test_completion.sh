#!/bin/bash
# Unit test of the bash completion (completions/ctrun.bash): bash's own
# completion machinery calls _ctrun with COMP_WORDS as a user's TAB would,
# with bash-completion's helpers loaded as on a Debian system (make deps
# installs bash-completion), and each case checks the words offered.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
if [ ! -r /usr/share/bash-completion/bash_completion ]; then
	bad "bash-completion" "not installed (make deps installs it)"
	echo "[==========] 1 test(s) run."; echo "[  FAILED  ] 1 test(s)."; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/imgs/rootfs"
touch "$tmp/imgs/a.sqsh" "$tmp/imgs/b.sif" "$tmp/imgs/c.tar" "$tmp/imgs/notes.txt" "$tmp/imgs/d.tar.gz"

# complete LINE: the words offered for the last word of LINE, sorted, one line.
complete_line() {
	bash --norc --noprofile -c '
		. /usr/share/bash-completion/bash_completion
		. "$1/completions/ctrun.bash"
		cd "$2"
		read -ra COMP_WORDS <<<"$3"
		[[ $3 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$3 COMP_POINT=${#3}
		_ctrun ctrun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$repo" "$tmp" "$1"
}
expect() { # name, line, expected words (sorted, space-separated)
	local got
	got=$(complete_line "$2")
	if [ "$got" = "$3 " ]; then ok "$1"; else bad "$1" "'$2' offered '$got', wanted '$3 '"; fi
}
has() { # name, line, words that must be among those offered
	local got w missing=""
	got=" $(complete_line "$2")"
	for w in $3; do [[ $got == *" $w "* ]] || missing+=" $w"; done
	if [ -z "$missing" ]; then ok "$1"; else bad "$1" "'$2' lacks$missing (offered:$got)"; fi
}

expect "--runtime values" "ctrun --runtime " "apptainer auto charliecloud crun enroot oci singularity"
expect "--mode values" "ctrun --mode " "auto node standalone task"
expect "--image-mode values" "ctrun --image-mode m" "mount"
expect "--backend values" "ctrun bench --backend " "auto nccl socket"
expect "images after --image" "ctrun --image imgs/" "imgs/a.sqsh imgs/b.sif imgs/c.tar imgs/d.tar.gz imgs/rootfs"
has "subcommands" "ctrun " "bench cache check env hooks pull save shell"
has "options" "ctrun --n" "--nproc-per-node --nnodes --node-rank --no-prefix --no-python --nv"
has "options after an option's value" "ctrun --image imgs/a.sqsh --mo" "--mount --mode"
has "the subcommand (or a command) after options" "ctrun --nproc-per-node 2 ch" "check chmod"
expect "cache actions" "ctrun cache " "create dir gc id list remove"
expect "hooks targets" "ctrun hooks install " "enroot oci"
has "bench flags" "ctrun bench --m" "--minbytes --maxbytes"
expect "bench datatypes" "ctrun bench -d b" "bfloat16"
expect "pull: a reference starts with docker://" "ctrun pull d" "docker://"
expect "pull flags" "ctrun pull --o" "--output"
echo "[==========] $((passed + failed)) test(s) run."
[ "$failed" -eq 0 ] && echo "[  PASSED  ] $passed test(s)." || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
