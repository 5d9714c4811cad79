// argo-diff-oracle: Argo CD's compare (gitops-engine's diff.Diff, legacy client-side mode) as a
// filter, for plumb's differential test.
//
// Input: one JSON object a line on stdin:
//
//	{"config": <desired object or null>, "live": <live object or null>,
//	 "ignoreAggregatedRoles": false}
//
// Output: one JSON object a line on stdout, in the same order:
//
//	{"modified": true, "normalizedLive": <json>, "predictedLive": <json>}
//	{"error": "..."}   when diff.Diff failed for that line
//
// normalizedLive and predictedLive are gitops-engine's bytes re-encoded with sorted keys, numbers
// as written and no HTML escaping, so that they can be compared byte for byte.
//
// Options are Argo CD's defaults: server-side diff off, structured-merge diff off (unless the
// desired object asks for ServerSideApply=true, as in Argo CD), no normalizer beyond
// gitops-engine's own, ignoreAggregatedRoles as given (Argo CD's default: false).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/argoproj/gitops-engine/pkg/diff"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type request struct {
	Config                json.RawMessage `json:"config"`
	Live                  json.RawMessage `json:"live"`
	IgnoreAggregatedRoles bool            `json:"ignoreAggregatedRoles"`
}

type response struct {
	Modified       bool            `json:"modified"`
	NormalizedLive json.RawMessage `json:"normalizedLive,omitempty"`
	PredictedLive  json.RawMessage `json:"predictedLive,omitempty"`
	Error          string          `json:"error,omitempty"`
}

func object(raw json.RawMessage) (*unstructured.Unstructured, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// canonical re-encodes JSON with sorted keys, numbers as written and no HTML escaping.
func canonical(b []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(out.Bytes(), "\n")), nil
}

func one(line []byte) response {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return response{Error: fmt.Sprintf("bad request: %v", err)}
	}
	config, err := object(req.Config)
	if err != nil {
		return response{Error: fmt.Sprintf("config: %v", err)}
	}
	live, err := object(req.Live)
	if err != nil {
		return response{Error: fmt.Sprintf("live: %v", err)}
	}
	res, err := diff.Diff(config, live,
		diff.IgnoreAggregatedRoles(req.IgnoreAggregatedRoles),
		diff.WithLogr(logr.Discard()))
	if err != nil {
		return response{Error: err.Error()}
	}
	out := response{Modified: res.Modified}
	if out.NormalizedLive, err = canonical(res.NormalizedLive); err != nil {
		return response{Error: fmt.Sprintf("normalizedLive: %v", err)}
	}
	if out.PredictedLive, err = canonical(res.PredictedLive); err != nil {
		return response{Error: fmt.Sprintf("predictedLive: %v", err)}
	}
	return out
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if e := enc.Encode(one(line)); e != nil {
				fmt.Fprintln(os.Stderr, "argo-diff-oracle:", e)
				os.Exit(2)
			}
			// One answer per request, flushed: the caller may write and read in turns.
			if e := w.Flush(); e != nil {
				os.Exit(2)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "argo-diff-oracle:", err)
			os.Exit(2)
		}
	}
}
