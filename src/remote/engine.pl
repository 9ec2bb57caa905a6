# mlw's client of a Docker engine's unix socket on a target, with Perl's builtins only (perl-base
# is in every Debian and Ubuntu; it starts in ~9 ms where curl takes ~20 and the docker CLI ~60).
# Run as `perl -e "$mlw_engine_pl" MODE ARGUMENTS` by engine.sh (beside it):
#
#   http SECONDS SOCKET METHOD PATH BODY_FILE ANSWER_FILE
#     One HTTP/1.0 request; prints the answer's status code, its body into ANSWER_FILE ("" for
#     none; BODY_FILE "" sends none). Exits 3 when nothing was sent (no socket, no connection:
#     curl may try), 4 when the request may have gone out (timeout, short write, no HTTP answer):
#     it must not be asked again. The answer is read up to 1 MiB.
#   attach SOCKET CONTAINER CODE_FILE
#     Attaches to the container, starts it and waits for it (what `docker start -a` does after
#     ~60 ms of its own start): the output's frames go to stdout as they come, the container's
#     exit code into CODE_FILE. Any failure exits non-zero (3: not started; 4: started, or maybe).
use strict;
use warnings;

my $mode = shift @ARGV // '';

# A stream socket to the unix socket $path (sockaddr_un packed by hand: AF_UNIX is 1,
# SOCK_STREAM 1); exits $code when it cannot connect.
sub open_socket {
  my ($path, $code) = @_;
  my $socket;
  socket($socket, 1, 1, 0) && connect($socket, pack('SZ*', 1, $path)) || exit $code;
  binmode $socket;
  return $socket;
}

# Writes all of $data to $handle; exits $code when it cannot.
sub write_all {
  my ($handle, $data, $code) = @_;
  while (length $data) {
    my $n = syswrite($handle, $data);
    defined $n || exit $code;
    substr($data, 0, $n) = '';
  }
}

# Reads an answer's head (bounded: 64 KiB, 60 s); returns its status and what followed the head.
sub read_head {
  my ($handle, $code) = @_;
  my $read = '';
  alarm 60;
  while (index($read, "\r\n\r\n") < 0) {
    length($read) < 65536 || exit $code;
    my $n = sysread($handle, $read, 65536, length $read);
    $n || exit $code;
  }
  alarm 0;
  $read =~ m{^HTTP/1\.[01] (\d\d\d)[ \r]} || exit $code;
  return ($1, substr($read, index($read, "\r\n\r\n") + 4));
}

sub http {
  my ($seconds, $path, $method, $url, $body_file, $answer_file) = @ARGV;
  $SIG{ALRM} = sub { exit 4 };
  alarm $seconds;
  my $body = '';
  if ($body_file ne '') {
    open(my $in, '<', $body_file) || exit 3;
    binmode $in;
    local $/;
    $body = <$in>;
    close $in;
  }
  my $socket = open_socket($path, 3);
  my $request = "$method $url HTTP/1.0\r\nHost: docker\r\n";
  $request .= "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n"
    if $body_file ne '';
  write_all($socket, "$request\r\n$body", 4);
  my $answer = '';
  while (length($answer) < 1048576) {
    my $n = sysread($socket, $answer, 65536, length $answer);
    defined $n || exit 4;
    $n || last;
  }
  $answer =~ m{^HTTP/1\.[01] (\d\d\d)[ \r]} || exit 4;
  my $status = $1;
  if ($answer_file ne '') {
    my $at = index($answer, "\r\n\r\n");
    open(my $out, '>', $answer_file) || exit 4;
    binmode $out;
    print $out substr($answer, $at + 4) if $at >= 0;
    close $out || exit 4;
  }
  print $status;
  exit 0;
}

sub request {
  my ($id, $what, $version, $headers) = @_;
  return "POST /containers/$id/$what HTTP/$version\r\nHost: docker\r\n${headers}Content-Length: 0\r\n\r\n";
}

sub attach {
  my ($path, $id, $code_file) = @ARGV;
  $SIG{ALRM} = sub { exit 4 };
  my $stream = open_socket($path, 3);
  write_all($stream, request($id, 'attach?stream=1&stdout=1&stderr=1', '1.1',
                             "Connection: Upgrade\r\nUpgrade: tcp\r\n"), 3);
  my ($status, $frames) = read_head($stream, 3);
  $status == 101 || $status == 200 || exit 3;
  my $start = open_socket($path, 4);
  write_all($start, request($id, 'start', '1.0', ''), 4);
  ($status) = read_head($start, 4);
  $status == 204 || $status == 304 || exit 4;
  close $start;
  # The output's frames: 8 bytes (stream, 0, 0, 0, size) and the bytes.
  while (1) {
    while (length($frames) >= 8) {
      my $size = unpack('N', substr($frames, 4, 4));
      last if length($frames) < 8 + $size;
      my $out = substr($frames, 8, $size);
      substr($frames, 0, 8 + $size) = '';
      while (length $out) {
        my $n = syswrite(STDOUT, $out);
        defined $n || last;
        substr($out, 0, $n) = '';
      }
    }
    my $n = sysread($stream, $frames, 65536, length $frames);
    last unless $n;
  }
  close $stream;
  my $wait = open_socket($path, 4);
  write_all($wait, request($id, 'wait', '1.0', ''), 4);
  ($status, my $answer) = read_head($wait, 4);
  $status == 200 || exit 4;
  while (sysread($wait, $answer, 4096, length $answer)) {
    length($answer) < 65536 || exit 4;
  }
  $answer =~ /"StatusCode":(\d+)/ || exit 4;
  open(my $out, '>', $code_file) || exit 4;
  print $out "$1\n";
  close $out || exit 4;
  exit 0;
}

$mode eq 'http' ? http() : $mode eq 'attach' ? attach() : exit 2;
