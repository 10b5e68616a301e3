#!/usr/bin/env bash
# Debian packages the lab and the tests need (root). Safe to run again: apt skips what is there.
set -euo pipefail
PACKAGES=(
  openssh-server openssh-client   # sshd inside fake nodes; ssh for Ansible
  debootstrap debian-archive-keyring  # the cached base root filesystem of fake nodes
  iproute2 util-linux mount procps    # namespaces, veth, bridges; unshare, nsenter, pivot_root; ps
  postgresql                      # the fleet store's PostgreSQL tests run against a real server
  python3 python3-venv            # the project's virtualenv
  dnsmasq-base ipxe ipxe-qemu ovmf qemu-system-x86 qemu-utils busybox-static  # the lab's PXE boots
  equivs dpkg-dev                 # the lab's apt repository of stand-in packages
  slurm-wlm munge openmpi-bin libpmix-dev  # real slurmctld/srun and mpirun across the fake nodes (libpmix.so for srun --mpi=pmix)
  slurmdbd mariadb-server          # the lab's Slurm accounting: sacct's job records (bringup/lab/accounting.py)
  chromium                        # renders the HTML report in the report test
  sysbench fio stress-ng          # the host stage's tools: its unit tests run their commands here
  ca-certificates
)
if [ "$(id -u)" != 0 ]; then
  echo "install-system-deps: run as root (apt-get)" >&2
  exit 1
fi
missing=()
for p in "${PACKAGES[@]}"; do
  [[ $p == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
