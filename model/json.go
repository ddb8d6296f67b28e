package model

import "encoding/json"

func jsonScalar(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
