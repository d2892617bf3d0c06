#!/bin/bash
# ensure-user.sh [USER] — make sure an unprivileged test user exists (default: ctrunuser) and
# print its name. Tests use it to run srun/sbatch/ctrun as an HPC user does
# (`su USER -c "SLURM_CONF=... srun ..."`): tasks then run as that user on the nodes.
# Idempotent; needs root only when the user must be created.
set -euo pipefail

user=${1:-${CTRUN_TEST_USER:-ctrunuser}}
[[ $user =~ ^[a-z_][a-z0-9_-]{0,30}$ ]] || { echo "ensure-user.sh: bad user name '$user'" >&2; exit 1; }

if ! getent passwd "$user" >/dev/null; then
    [[ $(id -u) == 0 ]] || { echo "ensure-user.sh: user $user missing and not root" >&2; exit 1; }
    # A home directory: batch jobs write slurm-JOB.out into the submit directory, and tests
    # submit from there. bash as shell: tests pass command strings through `su -c`.
    useradd --create-home --shell /bin/bash --user-group "$user"
fi
echo "$user"
