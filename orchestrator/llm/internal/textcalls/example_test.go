package textcalls_test

import (
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/textcalls"
)

func ExampleParse() {
	text := "Checking the Pi.\n<tool_call>\n{\"name\": \"sysinfo\", \"arguments\": {\"verbose\": true}}\n</tool_call>"
	rest, calls := textcalls.Parse(text, func(name string) bool { return name == "sysinfo" })
	fmt.Printf("%q\n", rest)
	for _, c := range calls {
		fmt.Println(c.Name, string(c.Arguments))
	}
	// Output:
	// "Checking the Pi."
	// sysinfo {"verbose": true}
}
