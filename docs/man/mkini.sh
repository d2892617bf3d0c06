#!/bin/sh
# mkini.sh CTRUN_INI > ctrun.ini.5.scd: the ctrun.ini(5) page, generated from
# the reference configs/ctrun.ini (every key, its default and its comment), so
# the page and the file cannot disagree.  tests/unit/test_manpages.sh checks
# the file against the code's key table.
set -eu
awk '
function flush_keys() {
	if (keys != "") {
		print keys
		print "\t" (text != "" ? text : "See the section above.")
		print ""
	}
	keys = ""; text = ""
}
BEGIN {
	print "ctrun.ini(5)"
	print ""
	print "# NAME"
	print ""
	print "ctrun.ini - settings of ctrun(1)"
	print ""
	print "# SYNOPSIS"
	print ""
	print "_/etc/ctrun/ctrun.ini_, _~/.config/ctrun/ctrun.ini_, _$CTRUN_CONFIG_"
	print ""
	print "# DESCRIPTION"
	print ""
	head = 1
}
/^\[/ {
	if (head) { print desc; print ""; head = 0 }
	flush_keys()
	sub(/^\[/, ""); sub(/\].*/, "")
	print "# SECTION [" $0 "]"
	print ""
	next
}
/^;[a-z_]+ =/ {
	line = substr($0, 2)
	k = line; sub(/ =.*/, "", k)
	v = line; sub(/^[a-z_]+ = ?/, "", v)
	gsub(/_/, "\\_", k); gsub(/\*/, "\\*", v); gsub(/_/, "\\_", v)
	entry = "*" k "* = " (v != "" ? v : "(unset)")
	if (keys != "" && pending != "") flush_keys()
	if (keys == "") { keys = entry; text = pending } else keys = keys ", " entry
	pending = ""
	next
}
/^;/ {
	c = $0; sub(/^; ?/, "", c)
	gsub(/\*/, "\\*", c); gsub(/_/, "\\_", c); gsub(/`/, "", c)
	if (head) { sub(/^ +/, "", c); desc = desc (desc == "" ? "" : "\n") c; next }
	if (keys != "" && pending == "" && c != "") { flush_keys() }
	if (c == "") next
	pending = pending (pending == "" ? "" : " ") c
	next
}
/^[ \t]*$/ { next }
END {
	flush_keys()
	print "# ENVIRONMENT"
	print ""
	print "*CTRUN_*_KEY_ sets _key_ of any section (*CTRUN_MAX_RESTARTS=2*); *CTRUN_CONFIG* names"
	print "one more file. The command line wins over both."
	print ""
	print "# SEE ALSO"
	print ""
	print "*ctrun*(1), *ctrun-hook*(8)"
}' "$1"
