#pragma once
// Charts are drawn by gnuplot, run as a separate program (no library to link): `dptrain report --plot`
// and `dptrain plot` write a gnuplot script next to the PNG, so it can be edited and run again.
#include <string>

namespace dptrain::app {

// Whether a byte is a control character (C0 or DEL): a newline would end a gnuplot command and a
// table row, an escape sequence would drive the terminal.
bool is_control(char c);

// A name (a model, a run) as the table and the chart show it: control characters (a newline, a terminal's escape
// sequence) written as \n, \r, \t or \xNN, so that a name from a JSON file stays on one line and
// cannot drive the terminal.
std::string printable_name(const std::string& name);

// A gnuplot string that gnuplot takes literally: single-quoted, where gnuplot expands no backquote
// (a double-quoted string runs `command` through the shell), no @macro and no backslash escape; a
// single quote inside is written twice. It cannot hold a newline, so the text must have none.
std::string gnuplot_single_quoted(const std::string& text);

// The lines that send a script's chart to `png` at `width` x `height` pixels (pngcairo where gnuplot
// has it, else its plain png terminal). The path must hold no control character (checked), or the
// chart would land elsewhere.
std::string gnuplot_png_output(const std::string& png, int width, int height);

// A number in a data block, to 10 significant digits; gnuplot reads NaN as a missing point.
std::string gnuplot_number(double v);

// The line that sends the `print` commands after it to the text file `table` (the --table of a chart). The
// path must hold no control character (checked).
std::string gnuplot_print_to(const std::string& table);

// The lines that print the columns `columns` ("1:2") of the data block `block` ("$steps0") as gnuplot
// read them (`set table`: each point as gnuplot parsed it) under a line "# TITLE", where gnuplot_print_to
// sends them; `title` must hold no newline.
std::string gnuplot_table_section(const std::string& title, const std::string& block, const std::string& columns);

// The gnuplot to run: $GNUPLOT, else the first `gnuplot` on PATH; empty when there is none.
std::string find_gnuplot();

// Writes `script` to PNG.gp and runs gnuplot on it, which must write `png`. `why` names the option that
// needs gnuplot in the error when it is not installed.
void draw_with_gnuplot(const std::string& script, const std::string& png, const std::string& why);

}  // namespace dptrain::app
