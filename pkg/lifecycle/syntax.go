package lifecycle

import (
	"fmt"
	"strings"
)

// likelyCause names the usual mistake behind a JSON syntax error at byte off, whose
// encoding/json message is msg: a trailing comma, a missing comma or colon, single quotes,
// a comment, an unquoted key or value, a bracket never closed. It returns the offset to
// report (the comma, for a trailing comma) and the cause, or "" when none fits.
func likelyCause(data []byte, off int, msg string) (int, string) {
	if msg == "unexpected end of JSON input" {
		if open, ok := unclosed(data); ok {
			return len(data), fmt.Sprintf("the document ends before the %q opened at %s is closed",
				string(data[open]), position(data, open))
		}
		return len(data), "the document ends in the middle of a value"
	}
	if off < 0 || off >= len(data) {
		return off, ""
	}
	c := data[off]
	prev := off - 1
	for prev >= 0 && isJSONSpace(data[prev]) {
		prev--
	}
	switch {
	case (c == ']' || c == '}') && prev >= 0 && data[prev] == ',':
		return prev, fmt.Sprintf("trailing comma before %q: JSON allows no comma after the last item", string(c))
	case c == '\'':
		return off, "single quotes: JSON strings and keys take double quotes"
	case c == '/' && off+1 < len(data) && (data[off+1] == '/' || data[off+1] == '*'), c == '#':
		return off, "a comment: JSON has no comments"
	case strings.Contains(msg, "after object key:value pair"):
		return off, "missing comma between two members of an object"
	case strings.Contains(msg, "after array element"):
		return off, "missing comma between two items of an array"
	case strings.Contains(msg, "after object key"):
		return off, `missing ':' between a key and its value`
	case strings.Contains(msg, "in string escape code"):
		return off, fmt.Sprintf(`invalid escape "\%c" in a string: JSON knows \" \\ \/ \b \f \n \r \t and \uXXXX (a Windows path needs \\)`, c)
	case strings.Contains(msg, "in string literal"):
		return off, "a string holds a raw control character (a line break or tab must be written \\n or \\t), or is not closed on its line"
	case isLetter(c) && strings.Contains(msg, "looking for beginning of"):
		word := data[off:]
		end := 0
		for end < len(word) && (isLetter(word[end]) || word[end] >= '0' && word[end] <= '9' || word[end] == '_' || word[end] == '-') {
			end++
		}
		w := string(word[:end])
		switch strings.ToLower(w) {
		case "true", "false", "null":
			return off, fmt.Sprintf("%q: JSON's literals are true, false and null, in lowercase", w)
		case "none", "nil", "undefined":
			return off, fmt.Sprintf("%q: JSON writes an absent value as null", w)
		}
		if off == 0 || prev < 0 {
			return off, "not JSON (YAML is not read here; \"pcs-lifecycle convert\" reads ParallelCluster and CloudFormation YAML)"
		}
		if strings.Contains(msg, "object key") {
			return off, fmt.Sprintf("unquoted key %q: keys take double quotes", w)
		}
		return off, fmt.Sprintf("unquoted text %q: string values take double quotes", w)
	}
	return off, ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// unclosed returns the offset of the innermost '{' or '[' still open at the end of data.
func unclosed(data []byte) (int, bool) {
	var stack []int
	inString, escaped := false, false
	for i, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			stack = append(stack, i)
		case (c == '}' || c == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return 0, false
	}
	return stack[len(stack)-1], true
}
