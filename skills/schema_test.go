package skills

import (
	"encoding/json"
	"testing"
)

func TestSchema(t *testing.T) {
	tests := []struct {
		name string
		tool Tool
		want string
	}{
		{"no parameters", Tool{Name: "uptime"},
			`{"additionalProperties":false,"properties":{},"type":"object"}`},
		{"optional only", Tool{Name: "x", Parameters: Parameters{Properties: map[string]Param{
			"verbose": {Type: TypeBoolean, Default: false},
		}}}, `{"additionalProperties":false,"properties":{"verbose":{"default":false,"type":"boolean"}},"type":"object"}`},
		{"required, description and defaults", Tool{Name: "cpu_temp", Parameters: Parameters{
			Properties: map[string]Param{
				"zone": {Type: TypeInteger, Description: "thermal zone index", Default: int64(0)},
				"tags": {Type: TypeArray, Default: []any{"a", int64(1)}},
				"opts": {Type: TypeObject, Default: map[string]any{"k": "v"}},
			},
			Required: []string{"zone"},
		}}, `{"additionalProperties":false,"properties":{` +
			`"opts":{"default":{"k":"v"},"type":"object"},` +
			`"tags":{"default":["a",1],"type":"array"},` +
			`"zone":{"default":0,"description":"thermal zone index","type":"integer"}},` +
			`"required":["zone"],"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.tool.Schema())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Schema =\n%s\nwant\n%s", b, tt.want)
			}
		})
	}
}

func TestSchemaIsACopy(t *testing.T) {
	tool := Tool{Name: "x", Parameters: Parameters{
		Properties: map[string]Param{"tags": {Type: TypeArray, Default: []any{"a"}}},
		Required:   []string{"tags"},
	}}
	s := tool.Schema()
	s["required"].([]string)[0] = "changed"
	s["properties"].(map[string]any)["tags"].(map[string]any)["default"].([]any)[0] = "changed"
	if tool.Parameters.Required[0] != "tags" || tool.Parameters.Properties["tags"].Default.([]any)[0] != "a" {
		t.Error("changing the schema changed the tool")
	}
}
