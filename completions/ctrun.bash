# bash completion for ctrun(1): subcommands, options, the values of
# --runtime, --mode, --backend, --image-mode, --stage, and image files
# (.sqsh, .sif, archives, directories) after --image.
# Installed as PREFIX/share/bash-completion/completions/ctrun.

_ctrun_images()
{
	# Directories (a rootfs, or to walk into) and the image kinds ctrun detects.
	local IFS=$'\n' f
	COMPREPLY=($(compgen -d -- "$cur"))
	for f in $(compgen -f -- "$cur"); do
		case $f in
		*.sqsh | *.squashfs | *.sif | *.tar | *.tar.gz | *.tgz | *.tar.zst | *.tar.xz)
			COMPREPLY+=("$f") ;;
		esac
	done
	compopt -o filenames 2>/dev/null
}

_ctrun()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
	fi

	local global="--nproc-per-node --mode --master-addr --master-port --nnodes --node-rank
		--max-restarts --kill-timeout --gpu-isolation --env --env-file --clean-env --python
		--no-python --prefix
		--no-prefix --log-dir --timings --verbose --quiet --dry-run --help --version --image
		--runtime --mount --workdir --image-mode --stage --nv --entrypoint --root --no-home
		--writable --name --name-reset --save --unshare --device --json
		--rdzv-timeout"
	local subcommands="env shell check bench cache hooks pull save"

	case $prev in
	--runtime) COMPREPLY=($(compgen -W "auto enroot apptainer singularity oci crun charliecloud" -- "$cur")); return ;;
	--mode) COMPREPLY=($(compgen -W "auto node task standalone" -- "$cur")); return ;;
	--backend) COMPREPLY=($(compgen -W "auto nccl socket" -- "$cur")); return ;;
	--image-mode) COMPREPLY=($(compgen -W "auto mount unpack" -- "$cur")); return ;;
	--stage) COMPREPLY=($(compgen -W "auto sbcast off" -- "$cur")); return ;;
	--unshare) COMPREPLY=($(compgen -W "net ipc uts net,ipc,uts" -- "$cur")); return ;;
	--nproc-per-node) COMPREPLY=($(compgen -W "auto gpu 1 2 4 8" -- "$cur")); return ;;
	--image) _ctrun_images; return ;;
	--log-dir | --mount | --workdir | --python)
		COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
	--env-file)
		COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
	--master-addr | --master-port | --nnodes | --node-rank | --max-restarts | --kill-timeout | \
	--env | --rdzv-timeout)
		return ;;
	esac

	# The first word that is not an option (or an option's value) decides.
	local i sub="" takes="--nproc-per-node --mode --master-addr --master-port --nnodes
		--node-rank --max-restarts --kill-timeout --env --env-file --python --log-dir --image --runtime
		--mount --workdir --image-mode --stage --rdzv-timeout"
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--) sub=--; break ;;
		-*) [[ " ${takes//$'\n'/ } " == *" ${words[i]} "* ]] && ((i++)) ;;
		*) sub=${words[i]}; break ;;
		esac
	done

	case $sub in
	"")
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$global" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$subcommands" -- "$cur") $(compgen -c -- "$cur"))
		fi ;;
	bench)
		if [[ $prev == -d || $prev == --datatype ]]; then
			COMPREPLY=($(compgen -W "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "all_reduce all_gather reduce_scatter broadcast alltoall all
				-b --minbytes -e --maxbytes -f --stepfactor -i --stepbytes -n --iters -w
				--warmup_iters -c --check -d --datatype -r --root -o --op --backend --json
				--rdzv-timeout" -- "$cur"))
		fi ;;
	cache)
		if ((cword == i + 1)); then
			COMPREPLY=($(compgen -W "list create remove gc dir id" -- "$cur"))
		elif [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--shared --budget --help" -- "$cur"))
		else
			_ctrun_images
		fi ;;
	hooks)
		if ((cword == i + 1)); then
			COMPREPLY=($(compgen -W "install uninstall configure" -- "$cur"))
		elif ((cword == i + 2)) && [[ ${words[i+1]} != configure ]]; then
			COMPREPLY=($(compgen -W "enroot oci" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "--system --dir --hook --gpus --help" -- "$cur"))
		fi ;;
	save)
		if [[ $prev == -o || $prev == --output ]]; then
			COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null
		elif [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-o --output --help" -- "$cur"))
		fi ;;
	pull)
		if [[ $prev == -o || $prev == --output ]]; then
			COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null
		elif [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-o --output --help" -- "$cur"))
		elif [[ $cur != *[:/#]* ]]; then
			COMPREPLY=($(compgen -W "docker://" -- "$cur")); compopt -o nospace 2>/dev/null
		fi ;;
	shell | check | env)
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W "$global" -- "$cur")) ;;
	*)
		# The command's own words: files.
		COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
	esac
}
complete -F _ctrun ctrun
