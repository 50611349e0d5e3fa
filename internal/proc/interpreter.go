package proc

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// shebangMax is how much of a file the kernel reads for its "#!" line (BINPRM_BUF_SIZE).
const shebangMax = 256

// InterpreterError says a script could not start because the interpreter its "#!" line names
// does not exist: exec reports ENOENT for the interpreter, which otherwise reads as if the
// script itself were missing. CRLF is set when the line ends in a carriage return (a script
// saved with Windows line ends names "/bin/bash\r").
type InterpreterError struct {
	Interpreter string
	CRLF        bool
	Err         error // the exec error (ENOENT)
}

func (e *InterpreterError) Error() string {
	msg := "interpreter " + strconv.Quote(e.Interpreter) + " named by its #! line does not exist"
	if e.CRLF {
		msg += ": the script has CRLF (Windows) line ends; convert it to LF (dos2unix, or sed -i 's/\\r$//')"
	}
	return msg
}

func (e *InterpreterError) Unwrap() error { return e.Err }

// explainNotExist turns the ENOENT of exec'ing path into an *InterpreterError when path exists
// and starts with a "#!" line whose interpreter does not exist; otherwise it returns err.
// It runs only on the failure path.
func explainNotExist(path, dir string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	p := path
	if !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	f, oerr := os.Open(p)
	if oerr != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, shebangMax)
	n, _ := f.Read(head)
	interp, crlf, ok := Shebang(head[:n])
	if !ok {
		return err
	}
	if _, serr := os.Stat(interp); serr == nil {
		return err // the interpreter exists: something else is missing (its own interpreter, a library)
	}
	return &InterpreterError{Interpreter: interp, CRLF: crlf, Err: err}
}

// Shebang returns the interpreter of a file's "#!" line, as the kernel reads it (the first
// word after "#!", ended by a space, a tab or the end of the line), and whether the line ends in
// a carriage return. ok is false for a file without "#!".
func Shebang(head []byte) (interp string, crlf, ok bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", false, false
	}
	line := head[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	crlf = bytes.HasSuffix(line, []byte("\r"))
	line = bytes.TrimLeft(line, " \t")
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 {
		return "", crlf, false
	}
	return string(line), crlf, true
}
