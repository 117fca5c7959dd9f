# tests/integration/workload.pl: a deterministic hash/regex/sort workload for
# perl, run by programs.sh with and without xalloc preloaded; stdout must be
# identical. Whether libxalloc.so.1 is mapped goes to stderr.
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);

open(my $maps, '<', '/proc/self/maps') or die "maps: $!";
my $loaded = grep { /r-xp.*libxalloc\.so\.1/ } <$maps>;
close($maps);
print STDERR "xalloc-loaded=", ($loaded ? "True" : "False"), "\n";

# A linear congruential generator: perl's rand differs between builds.
my $state = 42;
sub lcg { $state = ($state * 1103515245 + 12345) % 2147483648; return $state; }

my %h;
for my $i (0 .. 99_999) {
    my $k = sprintf("key-%06d-%x", $i, lcg());
    $h{$k} = join("-", map { lcg() % 1000 } 1 .. ($i % 7 + 1));
}
print "hash ", scalar(keys %h), "\n";

my @sorted = sort { length($h{$a}) <=> length($h{$b}) or $a cmp $b } keys %h;
print "sorted $sorted[0] $sorted[-1]\n";

my ($matches, $subs) = (0, 0);
my @out;
for my $k (@sorted) {
    my $v = $h{$k};
    $matches++ if $v =~ /(\d)\1/;
    (my $w = $v) =~ s/(\d+)-(\d+)/$2:$1/g and $subs++;
    push @out, $w;
}
my $all = join("\n", @out);
print "regex $matches $subs ", length($all), " ", md5_hex($all), "\n";

my %count;
$count{$_}++ for map { split /[-:]/ } @out;
my @top = (sort { $count{$b} <=> $count{$a} or $a <=> $b } keys %count)[0 .. 4];
print "top @top\n";
delete @h{ @sorted[ grep { $_ % 2 } 0 .. $#sorted ] };
my $s = "";
$s .= $_ x 3 for sort values %h;
print "final ", scalar(keys %h), " ", length($s), " ", md5_hex($s), "\n";
