#!/bin/sh
# evoclaw prerm: on removal, stop and disable the units. An upgrade keeps
# them running until postinst restarts them on the new binary.
set -e
if [ "$1" = "remove" ] && [ -d /run/systemd/system ]; then
	systemctl disable --now evoclaw.service evoclaw-edge.service || true
fi
exit 0
