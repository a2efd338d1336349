#!/usr/bin/env bash
# What the real node (src/gshare/devnode.py) needs from Debian: containerd and runc to run pods,
# the CNI plugins (bridge, host-local, portmap, loopback) for their network, iptables and ipset
# for their network policies (kube-router). Installed when missing and the user is root (as `make e2e-deps` installs
# Chromium); otherwise one line says what is missing. Exits 0 when the node can run.
set -euo pipefail

NODE_PACKAGES="containerd runc containernetworking-plugins iptables ipset"
missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || test -x /usr/sbin/runc || missing+=(runc)
test -x /usr/lib/cni/bridge || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || test -x /usr/sbin/iptables || missing+=(iptables)
command -v ipset >/dev/null || test -x /usr/sbin/ipset || missing+=(ipset)
if ((${#missing[@]} == 0)); then
  exit 0
fi
if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "node: installing ${missing[*]} from Debian's packages" >&2
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $NODE_PACKAGES >/dev/null
else
  echo "node: ${missing[*]} missing, so the test and demo clusters have simulated nodes only; as root on Debian: apt-get install $NODE_PACKAGES" >&2
fi
