// Package logging builds the executor's zap logger: JSON lines with the keys timestamp (UTC,
// RFC 3339 with microseconds), level (capital), message, then fields. It is the only package
// that constructs a zap logger; every other package receives one.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
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

// EncoderConfig is the executor.log line format.
func EncoderConfig() zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		TimeKey:        "timestamp",
		LevelKey:       "level",
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
		zapcore.NewCore(zapcore.NewJSONEncoder(EncoderConfig()), zapcore.AddSync(file), level),
	}
	if console != nil {
		cc := EncoderConfig()
		cc.EncodeTime = func(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
			enc.AppendString(t.UTC().Format("15:04:05.000"))
		}
		cc.ConsoleSeparator = " "
		cores = append(cores, zapcore.NewCore(zapcore.NewConsoleEncoder(cc), zapcore.AddSync(console), consoleLevel))
	}
	return zap.New(zapcore.NewTee(cores...))
}

// Stderr is the console writer used by the command line.
var Stderr io.Writer = os.Stderr
