#!/bin/sh
# evoclaw postrm. Purge keeps /var/lib/evoclaw (the audit trail is evidence,
# not cache) and the evoclaw account that owns it; remove both by hand.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
if [ "$1" = "purge" ] && [ -d /var/lib/evoclaw ]; then
	echo "evoclaw: kept /var/lib/evoclaw (audit trail) and the evoclaw account; delete them by hand if they are not needed" >&2
fi
exit 0
