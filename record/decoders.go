package record

import "fmt"

// DecoderOptions choose a decoder of input lines: Format native, map or
// swebench ("" is map when FieldMap is given, else native); FieldMap is
// the map format's (ParseFieldMap); Source the map format's records'
// outcome source; Gold a SWE-bench dataset file of gold patches and issue
// texts.
type DecoderOptions struct {
	Format, FieldMap, Source, Gold string
}

// OptionError is an error in one of the decoder options; Option names it
// (format, map, source or gold).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

func optionErrorf(option, format string, args ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// NewDecoder is the decoder the options choose.
func NewDecoder(o DecoderOptions) (Decoder, error) {
	format := o.Format
	if format == "" {
		format = "native"
		if o.FieldMap != "" {
			format = "map"
		}
	}
	var src Source
	if o.Source != "" {
		s, err := ParseSource(o.Source)
		if err != nil {
			return nil, &OptionError{"source", err}
		}
		src = s
	}
	switch {
	case o.FieldMap != "" && format != "map":
		return nil, optionErrorf("map", "only for the map format")
	case o.Gold != "" && format != "swebench":
		return nil, optionErrorf("gold", "only for the swebench format")
	}
	switch format {
	case "native":
		if src != "" {
			return nil, optionErrorf("source", "for the map format; native records carry their own")
		}
		return Native{}, nil
	case "map":
		if o.FieldMap == "" {
			return nil, optionErrorf("map", "the map format needs a field map")
		}
		fm, err := ParseFieldMap(o.FieldMap)
		if err != nil {
			return nil, &OptionError{"map", err}
		}
		fm.Source = src
		return fm, nil
	case "swebench":
		d := &SWEBench{}
		if o.Gold != "" {
			rc, err := OpenInput(o.Gold)
			if err != nil {
				return nil, fmt.Errorf("gold: %w", err)
			}
			defer rc.Close()
			if d.Gold, err = ReadGold(o.Gold, rc); err != nil {
				return nil, fmt.Errorf("gold: %w", err)
			}
		}
		return d, nil
	}
	return nil, optionErrorf("format", "%q: want native, map or swebench", format)
}
