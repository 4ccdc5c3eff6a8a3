package builtin

import (
	"regexp"
	"strings"
	"sync"
)

// denyRule is one pattern of the shell guard.
type denyRule struct {
	name string
	re   *regexp.Regexp
}

// denyRules are matched case-insensitively against a command with its
// whitespace collapsed. They aim at the catastrophic, not the clever: see
// the package documentation. They are compiled on the first command
// checked (about 240 KB of heap), not in every process that links the
// package: most never run bash.
var denyRules = sync.OnceValue(func() []denyRule {
	return []denyRule{
		{"recursive rm of / or home", cmd(`rm\s+(?:-[a-z-]*\s+)*-[a-z]*r[a-z]*\s+(?:-[a-z-]*\s+)*(?:/[/.]*\*?|~/?|\$home/?|\$\{home\}/?)(?:\s|;|&|\||$)`)},
		{"rm --no-preserve-root", cmd(`rm\b.*--no-preserve-root`)},
		{"sudo", cmd(`(?:sudo|doas)\b`)},
		{"su to another user", cmd(`su(?:\s+-\w*)*(?:\s+root)?\s*(?:$|[;&|)])`)},
		{"mkfs", cmd(`(?:mkfs(?:\.\w+)?|mke2fs|mkswap|mkdosfs|mkntfs|wipefs)\b`)},
		{"dd if=", cmd(`dd\s+(?:[^;&|]*\s)?if=`)},
		{"fork bomb", regexp.MustCompile(`:\(\)\{:\|:&\};:`)},
		{"shutdown", cmd(`(?:shutdown|poweroff|halt)\b`)},
		{"reboot", cmd(`reboot\b`)},
		{"init runlevel 0/6", cmd(`(?:init|telinit)\s+[06]\b`)},
		{"systemctl power", cmd(`systemctl\s+(?:\S+\s+)*(?:poweroff|reboot|halt|kexec)\b`)},
		{"write to a block device", regexp.MustCompile(`>\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|mtdblock)`)},
		{"chmod/chown of /", cmd(`ch(?:mod|own)\s+(?:-\S+\s+)*\S+\s+/[/.]*(?:\s|$)`)},
	}
})

// commandPosition matches where a shell expects a command name: the start,
// after an operator or a substitution, or after a word that runs its
// arguments (exec, xargs, ...), optionally with a directory (/sbin/).
const commandPosition = `(?:^|[;&|(\x60]\s*|\$\(\s*|\b(?:exec|nohup|xargs|env|time|then|do|else|command|nice|timeout\s+\S+)\s+)(?:\S*/)?`

// cmd compiles a rule for a command name in command position.
func cmd(re string) *regexp.Regexp { return regexp.MustCompile(commandPosition + re) }

// unquote drops the quotes and backslashes a shell removes before it runs
// a word, so s""udo and \rm are seen as sudo and rm. A cheap
// normalisation for a speed bump, not a shell parser.
var unquote = strings.NewReplacer(`"`, "", "'", "", `\`, "")

// denied returns the name of the first rule cmd matches, or "". It is a
// speed bump against mistakes, never a security boundary: see the package
// documentation.
func denied(cmd string) string {
	if rule := deniedAs(cmd); rule != "" {
		return rule
	}
	return deniedAs(unquote.Replace(cmd))
}

func deniedAs(cmd string) string {
	norm := strings.ToLower(strings.Join(strings.Fields(cmd), " "))
	// Fork bombs hide in whitespace; look at them without any.
	dense := strings.Join(strings.Fields(norm), "")
	for _, r := range denyRules() {
		target := norm
		if r.name == "fork bomb" {
			target = dense
		}
		if r.re.MatchString(target) {
			return r.name
		}
	}
	return ""
}
