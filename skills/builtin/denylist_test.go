package builtin

import "testing"

func TestDenied(t *testing.T) {
	refused := []string{
		"rm -rf /", "RM -RF /", "rm -rf / --no-preserve-root", "rm  -fr   /*", "rm -r -f ~", "cd x && rm -Rf $HOME",
		"sudo apt-get install x", "echo x | SUDO tee /etc/y", "doas reboot", "su -", "su root",
		"mkfs.ext4 /dev/sda1", "mkfs /dev/mmcblk0p2", "dd if=/dev/zero of=/dev/sda", "dd bs=1M if=/dev/zero of=x",
		":(){ :|:& };:", ": ( ) { : | : & } ; :",
		"shutdown -h now", "/sbin/shutdown now", "poweroff", "reboot", "sync; reboot", "halt", "init 0", "telinit 6",
		"systemctl reboot", "systemctl --force poweroff", "echo x > /dev/sda", "cat img > /dev/mmcblk0",
		"chmod -R 777 /", "chown -R pi /",
		// cheap classes the attack round found: quotes, root spellings, the mkfs family
		`s""udo id`, `'sudo' id`, `\sudo id`, `r"m" -rf /`, "rm -rf //", "rm -rf /.", "rm -rf /./", "rm -rf ///*", "chmod -R 777 //",
		"mke2fs /dev/sda1", "mkswap /dev/sda2", "wipefs -a /dev/sda", "mkfs.vfat /dev/sdb1", `"mkfs.ext4" /dev/sda1`,
	}
	allowed := []string{
		"rm -rf ./build", "rm -rf /tmp/work/x", "rm -r build/", "ls /", "echo sudoku", "grep -r reboot logs/",
		"cat shutdown.log", "echo 'rebooted' > status", "dd_helper --x", "ps aux | grep init", "make mkfsx",
		"chmod 644 file", "echo hi > /dev/null", "git commit -m 'fix sudo docs'",
		"rm -rf /.cache/x", "rm -rf ./.", "echo 'mke2fs is a tool'", "ls //", "cat 'su'do.txt",
	}
	for _, c := range refused {
		if denied(c) == "" {
			t.Errorf("denied(%q) = allowed, want refused", c)
		}
	}
	for _, c := range allowed {
		if rule := denied(c); rule != "" {
			t.Errorf("denied(%q) = %q, want allowed", c, rule)
		}
	}
}
