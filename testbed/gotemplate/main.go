// gotemplate-oracle: Go's text/template with the Sprig functions, as ApplicationSet templates
// run (goTemplate: true), for plumb-appset's oracle test. Reads a JSON array of cases from
// stdin, each {"template": "...", "params": {...}, "missingkey": "error"|"default"}, and prints
// a JSON array of {"out": "..."} or {"err": "..."}, one per case, in order. Numbers decode as
// float64, as Argo CD's generators hand them to templates (through encoding/json).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

type testCase struct {
	Template   string                 `json:"template"`
	Params     map[string]interface{} `json:"params"`
	MissingKey string                 `json:"missingkey"`
}

type result struct {
	Out *string `json:"out,omitempty"`
	Err *string `json:"err,omitempty"`
}

func run(c testCase) result {
	funcs := sprig.TxtFuncMap()
	t := template.New("template").Funcs(funcs)
	if c.MissingKey != "" {
		t = t.Option("missingkey=" + c.MissingKey)
	}
	t, err := t.Parse(c.Template)
	if err != nil {
		msg := err.Error()
		return result{Err: &msg}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, c.Params); err != nil {
		msg := err.Error()
		return result{Err: &msg}
	}
	out := buf.String()
	return result{Out: &out}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("gotemplate-oracle (text/template + sprig/v3)")
		return
	}
	dec := json.NewDecoder(os.Stdin)
	var cases []testCase
	if err := dec.Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "gotemplate-oracle:", err)
		os.Exit(2)
	}
	results := make([]result, len(cases))
	for i, c := range cases {
		results[i] = run(c)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "gotemplate-oracle:", err)
		os.Exit(2)
	}
}
