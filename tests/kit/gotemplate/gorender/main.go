// gorender renders Go templates for the differential test of dutyline's kit/gotemplate.
//
// stdin: a JSON array of {"template": string, "data": any, "html": bool}; data is decoded
// into `any` as encoding/json does (every number a float64). stdout: a JSON array of
// {"ok": bool, "output": string, "error": string}, one per case, in order.
package main

import (
	"bytes"
	"encoding/json"
	htmltemplate "html/template"
	"os"
	texttemplate "text/template"
)

type testCase struct {
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data"`
	HTML     bool            `json:"html"`
}

type result struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  string `json:"error"`
}

func render(c testCase) (res result) {
	defer func() {
		if r := recover(); r != nil {
			res = result{OK: false, Error: "panic"}
		}
	}()
	var data any
	if len(c.Data) > 0 {
		if err := json.Unmarshal(c.Data, &data); err != nil {
			return result{Error: "bad data: " + err.Error()}
		}
	}
	var buf bytes.Buffer
	var err error
	if c.HTML {
		var t *htmltemplate.Template
		t, err = htmltemplate.New("t").Parse(c.Template)
		if err == nil {
			err = t.Execute(&buf, data)
		}
	} else {
		var t *texttemplate.Template
		t, err = texttemplate.New("t").Parse(c.Template)
		if err == nil {
			err = t.Execute(&buf, data)
		}
	}
	if err != nil {
		return result{Error: err.Error()}
	}
	return result{OK: true, Output: buf.String()}
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	out := make([]result, len(cases))
	for i, c := range cases {
		out[i] = render(c)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		os.Exit(3)
	}
}
