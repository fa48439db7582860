package deployid

import (
	"bytes"
	"errors"
	"slices"
)

// sortedJSON rewrites compact JSON, as encoding/json writes it, with the members of
// every object sorted by their encoded key; arrays keep their order and scalars are
// copied byte for byte. Working on the encoder's bytes (rather than decoding into
// `any` and encoding again, which costs four times as much) keeps the property that
// matters: every field encoding/json writes is hashed, and Go field order or map
// iteration order can never change the result.
//
// invalidUTF8 reports that the encoder met text that is not valid UTF-8 (see
// appendString); Validate rejects such configs because their text cannot survive
// a JSON round trip.
func sortedJSON(src []byte) (out []byte, invalidUTF8 bool, err error) {
	w := &jsonSorter{src: src}
	out, next, err := w.appendValue(make([]byte, 0, len(src)), 0, len(src))
	if err != nil {
		return nil, false, err
	}
	if next != len(src) {
		return nil, false, errMalformed
	}
	return out, w.invalidUTF8, nil
}

var errMalformed = errors.New("deployid: malformed JSON from the encoder")

type jsonSorter struct {
	src         []byte
	invalidUTF8 bool
}

type member struct {
	key        []byte // the encoded key, quotes included, normalised like strings
	start, end int    // the value's span in src
}

// appendValue appends the value starting at src[i] (and ending before limit) and
// returns the index after it.
func (w *jsonSorter) appendValue(out []byte, i, limit int) ([]byte, int, error) {
	src := w.src[:limit]
	if i >= len(src) {
		return nil, 0, errMalformed
	}
	switch src[i] {
	case '{':
		return w.appendObject(out, i, limit)
	case '[':
		out = append(out, '[')
		i++
		for first := true; ; first = false {
			if i >= len(src) {
				return nil, 0, errMalformed
			}
			if src[i] == ']' {
				return append(out, ']'), i + 1, nil
			}
			if !first {
				if src[i] != ',' {
					return nil, 0, errMalformed
				}
				out = append(out, ',')
				i++
			}
			var err error
			if out, i, err = w.appendValue(out, i, limit); err != nil {
				return nil, 0, err
			}
		}
	case '"':
		return w.appendString(out, i, limit)
	default:
		end, err := skipValue(src, i)
		if err != nil {
			return nil, 0, err
		}
		return append(out, src[i:end]...), end, nil
	}
}

func (w *jsonSorter) appendObject(out []byte, i, limit int) ([]byte, int, error) {
	src := w.src[:limit]
	var small [16]member // most objects are small; avoids a heap slice per object
	members := small[:0]
	i++ // '{'
	for {
		if i >= len(src) {
			return nil, 0, errMalformed
		}
		if src[i] == '}' {
			i++
			break
		}
		if len(members) > 0 {
			if src[i] != ',' {
				return nil, 0, errMalformed
			}
			i++
		}
		keyEnd, err := skipString(src, i)
		if err != nil || keyEnd >= len(src) || src[keyEnd] != ':' {
			return nil, 0, errMalformed
		}
		valueEnd, err := skipValue(src, keyEnd+1)
		if err != nil {
			return nil, 0, err
		}
		key := src[i:keyEnd]
		if bytes.IndexByte(key, '\\') >= 0 { // normalise before sorting, so order follows the written key
			key, _, _ = w.appendString(nil, i, limit)
		}
		members = append(members, member{key: key, start: keyEnd + 1, end: valueEnd})
		i = valueEnd
	}
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	out = append(out, '{')
	for n, m := range members {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, m.key...)
		out = append(out, ':')
		var err error
		if out, _, err = w.appendValue(out, m.start, m.end); err != nil {
			return nil, 0, err
		}
	}
	return append(out, '}'), i, nil
}

// encoding/json writes an invalid UTF-8 byte as the escape \ufffd but a real
// U+FFFD literally; both decode to U+FFFD. The canonical form writes the literal in
// both cases, and the escape is how invalid UTF-8 is detected.
var (
	replacementEscape = []byte(`\ufffd`)
	replacementRune   = []byte("\uFFFD")
)

// appendString appends the string token at src[i], normalised as above.
func (w *jsonSorter) appendString(out []byte, i, limit int) ([]byte, int, error) {
	end, err := skipString(w.src[:limit], i)
	if err != nil {
		return nil, 0, err
	}
	token := w.src[i:end]
	if bytes.IndexByte(token, '\\') < 0 {
		return append(out, token...), end, nil
	}
	for j := 0; j < len(token); j++ {
		switch {
		case token[j] != '\\':
			out = append(out, token[j])
		case bytes.HasPrefix(token[j:], replacementEscape):
			w.invalidUTF8 = true
			out = append(out, replacementRune...)
			j += len(replacementEscape) - 1
		default: // any other escape is copied whole; skipString guarantees its second byte
			out = append(out, token[j], token[j+1])
			j++
		}
	}
	return out, end, nil
}

// skipValue returns the index after the value starting at src[i].
func skipValue(src []byte, i int) (int, error) {
	if i >= len(src) {
		return 0, errMalformed
	}
	switch src[i] {
	case '"':
		return skipString(src, i)
	case '{', '[':
		depth := 0
		for i < len(src) {
			switch src[i] {
			case '"':
				end, err := skipString(src, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errMalformed
	default: // number, true, false, null
		start := i
		for i < len(src) && !endsScalar(src[i]) {
			i++
		}
		if i == start {
			return 0, errMalformed
		}
		return i, nil
	}
}

// skipString returns the index after the string starting at src[i].
func skipString(src []byte, i int) (int, error) {
	if i >= len(src) || src[i] != '"' {
		return 0, errMalformed
	}
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errMalformed
}

// endsScalar reports a byte that cannot be part of a number or literal. The
// encoder writes no whitespace, so whitespace here means malformed input.
func endsScalar(b byte) bool {
	switch b {
	case ',', '}', ']', '{', '[', '"', ':', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
