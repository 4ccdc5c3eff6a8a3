package loop_test

import (
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/actors/loop"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// A driver feeds the machine what happened and carries out its effects;
// here the model asks for one tool, the tool answers, the model answers.
func ExampleMachine() {
	m := loop.New(loop.Rules{MaxIterations: 5, ToolErrorLimit: 3, MaxIdenticalCalls: 1, MaxParallel: 2, OnLimit: loop.OnLimitAnswer})
	show := func(effects []loop.Effect) {
		for _, e := range effects {
			switch e := e.(type) {
			case loop.AskModel:
				fmt.Println("ask the model, tools offered:", e.Tools)
			case loop.RunCall:
				fmt.Println("run call", e.Index)
			case loop.Record:
				fmt.Println("record", len(e.Messages), "messages")
			case loop.BatchEnded:
				fmt.Println("batch of", e.Calls)
			case loop.Finish:
				fmt.Println("answer:", e.Text)
			}
		}
	}
	show(m.Start())
	show(m.ModelAnswered(llm.Message{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "pi__sysinfo", Arguments: json.RawMessage(`{}`)}}}))
	show(m.CallEnded(0, loop.CallResult{Message: llm.Message{Role: llm.RoleTool, Content: "load 0.1"}}))
	show(m.ModelAnswered(llm.Message{Content: "The Pi is idle."}))
	// Output:
	// ask the model, tools offered: true
	// run call 0
	// batch of 1
	// record 2 messages
	// ask the model, tools offered: true
	// record 1 messages
	// answer: The Pi is idle.
}
