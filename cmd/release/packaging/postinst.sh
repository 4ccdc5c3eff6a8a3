#!/bin/sh
# evoclaw postinst: the system account, the data directory, and on upgrade
# a restart of the units that were running. Enables nothing.
set -e

if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /usr/lib/sysusers.d/evoclaw.conf
elif ! getent passwd evoclaw >/dev/null; then
	adduser --system --group --home /var/lib/evoclaw --no-create-home \
		--shell /usr/sbin/nologin --gecos "evoclaw agent runtime" evoclaw
fi
# The units create it too (StateDirectory=); here it exists for operator
# commands run before the first start (sudo -u evoclaw evoclaw agents add).
install -d -o evoclaw -g evoclaw -m 0700 /var/lib/evoclaw

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	# An upgrade restarts what was running on the old binary.
	if [ "$1" = "configure" ] && [ -n "$2" ]; then
		systemctl try-restart evoclaw.service evoclaw-edge.service || true
	fi
fi
exit 0
