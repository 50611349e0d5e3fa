// Package logging builds the executor's zap logger: JSON lines with the keys timestamp (UTC,
// RFC 3339 with microseconds), level (capital), message, then fields. It is the only package
// that constructs a zap logger; every other package receives one.
package logging

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// ParseLevel maps --log-level (debug, info, warn, error; any case) to a zap level.
func ParseLevel(s string) (zapcore.Level, error) {
	var l zapcore.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level %q: must be one of debug, info, warn, error", s)
	}
	return l, nil
}

func utcMicros(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
	enc.AppendString(t.UTC().Format("2006-01-02T15:04:05.000000Z"))
}

// EncoderConfig is the executor.log line format. zap writes the level before the time; the
// observed format has timestamp, level, message in that order, so the level key is left out
// here and put back by levelAfterTime.
func EncoderConfig() zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		TimeKey:        "timestamp",
		LevelKey:       zapcore.OmitKey,
		MessageKey:     "message",
		NameKey:        zapcore.OmitKey,
		CallerKey:      zapcore.OmitKey,
		FunctionKey:    zapcore.OmitKey,
		StacktraceKey:  zapcore.OmitKey,
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.CapitalLevelEncoder,
		EncodeTime:     utcMicros,
		EncodeDuration: zapcore.MillisDurationEncoder,
	}
}

// New returns a logger writing JSON lines to file at level and above, and the same events in a
// short human form to console (nil for none) at consoleLevel and above.
func New(file io.Writer, level zapcore.Level, console io.Writer, consoleLevel zapcore.Level) *zap.Logger {
	cores := []zapcore.Core{
		zapcore.NewCore(levelAfterTime{zapcore.NewJSONEncoder(EncoderConfig())}, zapcore.AddSync(file), level),
	}
	if console != nil {
		cc := EncoderConfig()
		cc.LevelKey = "level"
		cc.EncodeTime = func(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
			enc.AppendString(t.UTC().Format("15:04:05.000"))
		}
		cc.ConsoleSeparator = " "
		cores = append(cores, zapcore.NewCore(zapcore.NewConsoleEncoder(cc), zapcore.AddSync(console), consoleLevel))
	}
	return zap.New(zapcore.NewTee(cores...))
}

// levelAfterTime puts `"level":"INFO",` right after the timestamp, the first key.
type levelAfterTime struct{ zapcore.Encoder }

func (e levelAfterTime) Clone() zapcore.Encoder { return levelAfterTime{e.Encoder.Clone()} }

func (e levelAfterTime) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	buf, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return buf, err
	}
	b := buf.Bytes()
	i := bytes.IndexByte(b, ',') // the timestamp is first and holds no comma
	if i < 0 {
		return buf, nil
	}
	out := pool.Get()
	out.Write(b[:i+1])
	out.AppendString(`"level":"`)
	out.AppendString(ent.Level.CapitalString())
	out.AppendString(`",`)
	out.Write(b[i+1:])
	buf.Free()
	return out, nil
}

var pool = buffer.NewPool()
