#!/bin/sh
# probe - runs inside the tiny image: what the container sees, then saxpy.
echo "probe: CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset} RANK=${RANK-} LOCAL_RANK=${LOCAL_RANK-} uid=$(id -u)"
echo "probe: ls -l /dev/nvidia*:"
ls -l /dev/nvidia* 2>&1
echo "probe: /usr/lib/x86_64-linux-gnu:"
ls -l /usr/lib/x86_64-linux-gnu 2>&1
echo "probe: NVIDIA mounts:"
grep -i nvidia /proc/self/mountinfo | cut -d' ' -f4,5 2>&1
if [ -x /usr/bin/nvidia-smi ]; then
	nvidia-smi -L
	echo "probe: nvidia-smi -L exit $?"
else
	echo "probe: no nvidia-smi in the container"
fi
saxpy "$@"
rc=$?
echo "probe: saxpy exit $rc"
exit $rc
