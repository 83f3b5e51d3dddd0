"""The online-dual mode: out-of-core training over a cache of hard constraints (Ramanan sec. 3,
Alg. 2; LaRank's process-new and process-old steps; the hard-example cache of Felzenszwalb et al.).
This module is the schedule (OnlineDual); the cache and the memory it is kept in are
svmtrain.solvers.online_store, the reading of the file in windows svmtrain.solvers.online_reading,
and the resume state svmtrain.solvers.online_state.

The problem is the one every mode solves (DESIGN.md; C explicit):

    P(w) = 1/2 ||w||^2 + sum_i C_i max(0, max_j (l_ij - w.x_ij)),   D(a) <= OPT <= P(w(a))

The file is only streamed (svmtrain.data.iter_blocks: plain, compressed or standard input), never
held: memory is bounded by one window of examples and the cache. Alg. 2 as it runs here:

    A = {}, w = 0, UB = LB = 0
    for every chunk of whole examples (a few hundred to a few thousand):
        each example's worst offender j under the current w (the task's loss-augmented inference),
            g_ij = l_ij - w.x_ij
        if g_ij > xi_i - admit_margin (xi_i: the slack example i already pays in the cache, 0 when
            it has no constraint there; admit_margin = 0 is Alg. 2, see Admission):
            UB += C_i max(0, g_ij - xi_i), add ij to A with alpha_ij = 0
        if UB - LB > epsilon UB: re-optimise A with the engine (svmtrain.engine.solve, hot-started
            from alpha) until the cached problem's exact bounds meet epsilon / 2; LB = D(alpha),
            UB = the cached problem's exact P; drop the constraints whose alpha has been 0 for more
            than `keep_rounds` re-optimisations (Pruning)

LB = D(alpha) is a true lower bound on the whole problem (every alpha outside the cache is 0;
pruning removes only zeros); UB is the cached problem's, not the whole one's. The whole problem's
P(w) takes one more pass over the data (`objective.primal`, the code path of verify-bound), which
`train --verify` runs at the end, the default where the data streams. A pass that adds no
constraint has checked every example at an unchanged w: its UB is then the whole P(w), and
training stops before the remaining passes. The chunk is the unit of the explore-or-optimise
decision (Alg. 2 takes it per example; a chunk keeps the Python overhead per example small); chunks
are cut by examples across the reader's blocks, so the model does not depend on the block size.

Windows. Alg. 2 assumes the examples come in no particular order; files often come sorted (runs of
one label, drift). The file is read a window at a time, at most `shuffle_window` examples and
`window_rows` rows of whole examples (sentences and queries stay whole; the row bound keeps a
window's memory bounded however long its examples are; a plain file longer than that is cut into
windows of about equal size, estimated from its head: _balanced_windows), each visited in a random
order fixed by (seed, pass, the window's first row). Before a window is let go its examples, still in memory, are
looked at again under the current w (LaRank's process-old: an example that looked hard tends to
stay hard, and its worst offender under the w of its first visit is not the one under the current
w), until a sweep adds no constraint or after `window_looks` sweeps. An example pruned or never
admitted in an earlier window is not looked at again in the pass: that is what one pass cannot
know, and why its gap is certified by one more pass. The resume point is the window's first row
plus the examples of its sweeps done (`window_done`), so a resumed run is exact.

Structured tasks (`structured`: multiclass, sequence, ranking; an example has many constraints and
the oracle finds one at a time). A binary example can only give back its one constraint, so three
looks suffice (DEFAULT_WINDOW_LOOKS); a sentence needs as many looks as n-slack needs cutting-plane
rounds (tens). The schedule of a window is therefore n-slack's over the cache, with Alg. 2's test
as its stop:
    - a sweep of the window is cut into chunks of `chunk` examples, and into STRUCTURED_MIN_CHUNKS
      chunks at least, so that w moves inside the first sweep;
    - the first sweep (process-new): after a chunk, re-optimise when UB - LB > epsilon UB, for at
      most STRUCTURED_INNER_EPOCHS epochs: the next look brings better constraints than a tighter
      solve of these (n-slack's INNER_EPOCHS, Joachims et al. sec. 4);
    - a later sweep (process-old): explore every chunk at one w and re-optimise once, at the
      sweep's end (capped likewise), so that the sweep is one cutting-plane round over the window;
    - the window is done when a sweep raised UB by at most epsilon UB (the cache covers the window
      at that w) and the cache is solved to epsilon; when only the first holds, the cache is solved
      in full and one more sweep checks the window at that w; at most DEFAULT_STRUCTURED_LOOKS
      sweeps (a window that converges stops long before);
    - sequence constraints idle for 2 re-optimisations are pruned (Sequence.online_keep_inactive),
      as n-slack prunes them; multiclass keeps the default.
The measurements that chose these (certified gap after one pass, C 0.1, CPU seconds; the history
is in bench/README.md, online-structured):
    - STRUCTURED_MIN_CHUNKS = 6: UD English EWT's first 1,000 sentences in one window, one chunk a
      sweep 0.77, six 0.042;
    - STRUCTURED_INNER_EPOCHS = 10: the same sentences, twelve looks: capped at 3 or 5 epochs 0.149
      and 0.134 (the looks ran out), at 10 0.040. A re-optimisation costs about four epochs beyond
      its own (the engine is built and the gradients recomputed), so more, shorter solves cost more;
    - one re-optimisation per later sweep: UD one pass 37 re-optimisations and 435 epochs against
      109 and 1,120 with Alg. 2's test inside every sweep, 9.4e-4 in 63 s;
    - DEFAULT_STRUCTURED_LOOKS = 100: the conll2000 test file at C 1 (79 n-slack rounds) certified
      0.16 with 24 looks, 6.6e-3 with 48, 8.6e-4 with 100; sector (C 1) 8.9e-4 against 1.7e-3;
    - pruning sequence constraints at 2 idle re-optimisations: UD one pass 8.8e-4 in 47 s and
      307 MB, against 142,386 constraints and 520 MB kept 200 re-optimisations (the binary default,
      at the time's memory); sector took 27.5 s when pruned at 2 against 22.6 s;
    - DEFAULT_WINDOW_ROWS = 250,000 holds UD English EWT (204,577 tokens) and conll2000 (211,727)
      in one window, so that their one pass is the loop above. Smaller windows leave the earlier
      windows' constraints those of a staler w, and save some memory: UD in 2 / 4 windows
      (--window-rows 110000 / 55000) certified 0.153 / 0.22 after one pass at 108 / 101 MB,
      against 8.8e-4 at 118 MB in one (conll2000 in 60,000-row windows: 0.16). Binary files are
      cut by shuffle_window (100,000 examples) first.

Ranking (one slack per query; Ranking.worst_offenders). The task has a slack per preference pair,
but a query's pair terms are one max: C_q sum_pairs max(0, 1 - w.(x_a - x_b)) = C_q max over pair
sets S of (|S| - w.sum_S (x_a - x_b)), reached at S = the violated pairs. So a query is one
structured example: its worst offender is S (found in O(m log m), no pair listed), its constraint
sum_S (x_a - x_b) summed into one row of the features, its slack group the query (budget C_q). The
primal is the per-pair one; the dual over these constraints is the per-pair dual restricted to pair
weights that are sums of set weights, so D stays a true lower bound (and loses nothing at the
optimum: pair weights in [0, C_q] are sums of nested level sets). The cache holds a few
constraints per query (one per look it was violated at), each at most n_cols entries, instead of
every pair (caching all 367,663 pairs of ohsumed at C 0.01 took 200 MB). Queries are streamed whole
and must be contiguous in the file (a qid met again after other queries is refused, file and line).
A window of queries is done when a sweep raised UB by at most a quarter of epsilon UB
(Ranking.online_raise_share), at most 40 looks (online_looks): on ohsumed Fold 1 (62 queries,
C 0.01) twelve looks and the sentences' share certified 1.3e-2; 40 looks with half of epsilon
6.2e-4 to 7.0e-4 over seeds 1-4, with a quarter 5.7e-4 to 8.0e-4, and a quarter was the share that
certified every seed of six on its first 12 queries (half left one at 1.3e-3). One pass: 8.0e-4 in
1.09 s against n-slack's 1.77 s, 1,916 constraints (1/192 of the pairs). C 0.62 (svm_rank's
setting) is harder: 0.13 after one pass at these defaults, 8.7e-4 with --chunk 4 --window-looks 100.

Admission. Alg. 2 caches an example when it is violated beyond the slack it pays. An example that
the w of its moment satisfies by a hair is violated once w moves, and one pass does not come back
to it. `admit_margin` (in the units of the loss: the margin 1 of the binary hinge) also caches
examples within that distance of violation, with alpha = 0: the re-optimisations see them. One pass
on kddcup99 binary certified 1.4e-2 at 0 and 2.4e-4 at 0.3; ijcnn1 in windows of 10000, 4.8e-2 and
8.0e-3.

Pruning. The paper prunes alpha = 0 at once; on a9a, ijcnn1, reuters_lasvm and kddcup99 that gives
back, one re-optimisation later, constraints that are violated again at the end of the pass (in file
order, one pass certified 0.70 on ijcnn1 pruning at once, 0.088 keeping them 50 re-optimisations;
kddcup99 binary with windows 2.7e-2 at 50, 1.4e-2 at 200 or more). The default keeps them
`DEFAULT_KEEP_INACTIVE` re-optimisations; `cache_limit` still bounds the cache hard.

Passes: an example's slack group is its position in the file (its key, for the constraints task whose
qid groups may lie anywhere), so constraints found in different passes share its slack.

Memory. The engine's constraints name data rows by index, and a window's rows are gone once the
next is read, so the cache owns a `RowStore`:
    - the window being looked at is appended to it part by part as it is read (a part is in the
      store before the next is cut), and pinned there (`RowStore.pin`): its rows are both the
      data the sweeps explore and the rows its constraints name, held once;
    - rows beyond the data (the sequence task's unit row of a chunk) and, in a file of several
      windows, the rows of earlier windows still in use are copied in; a window's row taken by one
      sweep's constraint is shared by the later sweeps' constraints on it (`row_of`);
    - every stored row counts the cached terms on it; pruning and eviction release them, and the
      store is compacted in place (live rows moved down, terms renumbered, the arrays cut by realloc
      where nothing else refers to them) when dead entries outweigh live ones and when a window is
      let go;
    - columns are int32 and values the narrowest exact type (bytes for indicator features:
      svmtrain.data.value_dtype), both read by the engine in place; a sequence cache keeps its
      terms' rows and offsets as int32 too;
    - every generator on the way lets a block go before the next is read, and a resume state holds
      only the rows in use, each with its row in the window (`RowStore.saved`).
On a file of one window (UD, conll2000) the rows, w and the cache are what n-slack holds. The peak
was n-slack's within 1-2% (the heap trimmed before each re-optimisation; in the same runs UD
135.9 against 132.7 MB, conll2000 148.3 against 146.5 MB); n-slack's has fallen since, and one
pass of the command peaked at 0.98x n-slack's on UD (116 against 118 MB) and 0.90x on
conll2000 (128 against 142 MB; bench group online-structured, 2026-11-28, the cache's rows int32;
before them 1.07x and 0.93x), and since n-slack's cache grows in place and the sequence store
copies the reader's rows the widest first, at 1.02x (112 against 109 MB) and 1.04x (127 against
122 MB; 2026-11-29; at one pass's heap
peak on UD, 95.9 MB by memray, the cache's terms took 36.3, the row store 22.1 and w 16.0).
No schedule gets far below n-slack on such a file: at the heap peak of n-slack on UD English EWT
(98.8 MB, memray) the data were 21.6 MB (the rows 15.1, the tokens' per-row arrays 6.5, now 2 in
their narrow types) and the rest the dual state both modes hold (the cache's terms 26.3, the
engine over them 20.1, w 16.0; the engine's dense scratch of n_w zeros, 16 of those 20.1 MB as
allocated, is now a small table); a schedule holding none of the data would
still be at about 0.85x n-slack's peak RSS, and smaller windows hold no less, since a window's
constraints touch most of its rows. The certificate's pass after training needs w alone: the
pipeline lets the cache go before it (unless a resume state is asked for), which was 35 MB of the
heap peak of a one-pass UD run. The cache keeps a dual variable, and the rows of its constraints,
for every support example, so it grows with the data; `cache_limit` bounds it, and the summary line
reports the most it held. Under a bound, evicted support vectors keep their alphas in w and come
back with their example (below), so that more passes still close the gap. Without a limit the
window bound (below) holds a structured task's file of several windows to what its largest window
needed; a file of one window is not bounded, which its one pass needs. A binary or regression
file is not bounded by default (the pipeline's choice, svmtrain.pipeline._window_bound): there a
support vector is one row, and the bound saved no memory while it froze the earlier windows'
support vectors for the pass.

The cache limit (`cache_limit`: constraints, or bytes of the cache's arrays and of the rows its terms
use beyond the window's, which are the data) is checked after every chunk's additions, and when a
window is let go: its rows still in use count from then on, and are brought within a byte bound
before the next window is read (checked at the next window's first chunk, they were held beside
it: UD English EWT written 4 times in 32 MB, heap peak 151.1 -> 142.1 MB). A byte bound, once
passed, is evicted down to EVICT_TO (0.9) of it, so that the next chunks' constraints fit without
another eviction: each eviction folds support vectors into w0 (a pass over their terms), and one
after every chunk took sector multiclass under --cache-limit 8MB 177 s against 29 s (certified
2.7e-3 against 2.0e-3 after one pass; unbounded: 24 s); on UD English EWT, where a fold is small,
it moved the one-pass gap little (once in 16 MB 4.7e-3 -> 5.3e-3, 142.8 -> 134.6 MB; written 4
times in 32 MB 0.0546 -> 0.0554). A bound in constraints is the engine's size, kept exactly.
Eviction takes the idle constraints (alpha = 0 after a re-optimisation) first, then support
vectors, then the constraints not yet re-optimised, each oldest first: a new constraint evicted
before its first solve would never be tried, and the run would stop learning once the cache is
full of support.
The summary line counts the support vectors evicted and brought back (`evicted`, `returned`): a
bound below what a window's constraints need brings nearly every one back at every sweep, and
evicts another for it (UD English EWT in 16 MB, where a window needs 26 MB: 3.88 million evicted
and 3.85 million back in one pass, 3.5x the CPU time of the pass without a bound; written 4 times
in 26 MB, 353,467 and 269,836). Bringing them back within their pass only while the cache has
room took that pass from 121 s to 30-109 s of CPU in five variants (the eviction order, what
counts as room), but moved the certified gap both ways in single runs (5.3e-3 to 1.8e-3 ..
1.1e-2; written 4 times in 26 MB 0.075 to 0.075 .. 0.146), so it is not taken.

The window bound (`window_bound`, the default when no limit is set). Ramanan's cache has a fixed
size; a size in bytes that suits every file cannot be chosen in advance (a bound below what a
window's constraints need thrashes, above), but the first window measures it. The bound is the
most the cache has held while any window so far was looked at, the window's own rows not counted
(they are its data, which a single window holds as well); when a window is let go its rows still
in use count, and once the next window's first part is read, its constraints and the earlier
windows' are evicted down to the bound before that window's rows are stored, as under a byte
bound (the idle first, then support vectors, into w0, kept to come back in the next pass); while
a window is looked at, the earlier windows' are evicted, and the window being looked at is never
touched: its support vectors would come back at its next sweep. A window whose own constraints
need more raises the bound when it is let go. So the cache holds about one window's constraints
however long the file, and returns nothing within a pass. A file of one window has no earlier
window: its runs are those without a bound, bit for bit. Each row's row in its example
(RowStore.positions), which an evicted support vector needs to come back, is taken from the first
window's rows when the second is read (`row_pos`), not kept from the start (on a file of one
window it would be kept for nothing), and then kept a store row, not a cached term (UD English
EWT written 4 times: about 1 MB where it was 5.3).
In the last pass an evicted support vector of an earlier window would come back only in a run
that continues this one from its resume state: it is kept only when one is asked for
(`keep_evicted`, the pipeline's --save-state), and frozen otherwise, as a byte bound freezes what
exceeds its share. Measured on UD English EWT written 4 times, one pass, C 0.1 (the CLI, peak RSS
against the file once, 112.0 MB; bench/README.md): with the bound counting the let-go window's
rows and evicting after the next window's first chunk, 125.2 MB (+11.7%) and a certificate of
0.046; counting its rows at half / none, 126.7 / 128.2 MB and 0.061 / 0.067 (the evictions at
the next window's first chunk, beside its rows, were the peak); not keeping the last pass's
evicted support vectors, 125.9 MB and 0.043; the three together, the let-go window evicted before
the next is read, 120.5 MB (+7.6%) and 0.064. Earlier measurements, one pass at C 0.1, seed 1
(CPU s / peak RSS / certified gap; the windows of equal size, _balanced_windows; the heap trimmed
before each re-optimisation):
    - UD English EWT written 4 times (4 windows): 148-153 s / 149.5-149.9 MB / 0.0443, against
      324 s / 241 MB / 0.017 without a bound; two passes 239 s / 154.5 MB / 4.8e-3. The bound
      settled at 28.3 MB. The file once (one window) took 132.5-135.9 MB: x4 took 10-13% more,
      its w0, the kept evicted support vectors and the earlier windows' rows still in use. Since
      the engine's table replaced its dense scratch: x4 144.6-145.2 MB, once 134.0-140.4 MB in
      three pairs (+8.4%, +3.0%, +6.4%; the peak of one command moves by a few MB from run to run);
    - written 8 times (7 windows of 234,000 rows): 292 s / 161.8 MB / 0.0701, against 895 s /
      354 MB / 0.0151 without a bound;
    - at a 4 MB mmap threshold the file written 4 and 8 times peaked 15-20 MB higher (183-191
      MB, windows of 250,000 rows) than at the 1 MB the pipeline set for every structured run
      (svmtrain.memory.WINDOWS_MMAP_THRESHOLD; a sequence run's is now 256 KB, as its n-slack
      rounds': SEQUENCE_WINDOWS_MMAP_THRESHOLD);
    - where x4's peak above once's comes from (int32 cache rows, _row_index: 138 against 118 MB;
      the process's high-water mark and glibc's mallinfo2 read at each chunk, re-optimisation and
      window): x1 peaks while a chunk's constraints are added, x4 in its evictions (the fold into
      w0, the cache's copy of what stays, the store's compaction), from a level about 14 MB above
      x1's at the same point of a window: w0 2.7 MB, the kept evicted support vectors 3-4 MB, the
      earlier windows' rows still in use 4.5 MB, and the heap's pieces of small arrays. Evicting
      the let-go window's constraints before the next window is read (down to a share of the
      bound, the first window's positions tracked at once) took x4 to 129 MB, but at a share of
      0 / 0.5 / 0.75 certified 0.097 / 0.093 / 0.068 (0.092 at 0.5 with the last window's kept)
      against 0.044: the re-optimisations early in the next window revise those alphas, and
      frozen at once they cost the pass's certificate more than the 10% of memory they save.
      Trimming the heap after every chunk moved nothing (144.3 MB). A bound taken before the
      let-go window's rows count (the cache's own most, 20.7 MB on UD, not 23.6), with w0 counted
      against it, took x4 136.5 -> 133.5 MB but certified 0.084 against 0.046: not taken. Since
      a window's fingerprint converts 512 KB at a time (data.crc32_as), x4 peaked at 129-134 MB
      against once's 114-118 (+13.8%: bench group online-structured, 2026-11-28); since a
      sequence run's windows map arrays from 256 KB (svmtrain.memory), 125-126 against 112-113
      MB (+11.3% to +12.3%, 2026-11-29);
  A window's support vectors are evicted at once when it is let go, so they are kept
  (Folded.add) and folded into w0 FOLD_PIECE at a time: kept whole, their copies were the heap
  peak of UD written 4 times (158.6 MB, 141.6 in pieces, where the fold's copies of 20 MB were the
  peak in turn); the fold now reads the cache's own terms a piece at a time (views, not copies)
  and w0 grows a band at a time (SparseW0.add_dense_bands).
An evicted support vector is not taken out of w: its alpha is frozen, the w it gives kept in w0
(sum alpha x over the evicted, held as its non-zeros or, when denser, a vector: SparseW0), its
alpha l in fold_margin and its alpha in its example's evicted mass. The alphas are then those of
before, a feasible point, so the model does not move, and

    D = fold_margin + sum_cached alpha_c l_c - 1/2 |w|^2

stays a true lower bound. The engine solves for v = w - w0 over the cached alphas: its margins are
l_c - w0.x_c and each example's budget is C_i less its evicted mass, which keeps alpha feasible
when the example comes back in a later pass (the support vectors of an example leave together, so
none of its cached alpha is above the reduced budget); -1/2 |w0 + v|^2 differs from -1/2 |v|^2 -
v.w0 by a constant, so the engine's steps and gap are the restricted problem's. UB becomes that
problem's primal, 1/2 |w|^2 - w.w0 + fold_margin + sum_i (C_i - evicted mass_i) xi_i, so that
UB - LB still closes as the cache is solved. (Scaling the evicted alphas by the best beta in
[0, 1], a line search on D, never moved them in the runs below, and was left out.)
Measured, one pass unless said (certified gap; primal against OPT), against taking evicted support
vectors out of w with the zeros-first order of before: the conll2000 test file (100 sentences, C
0.1, windows of 500 rows, OPT 70.33) at 300 / 150 / 80 constraints 0.178 / 0.220 / 0.299 (primal
78.6 / 81.0 / 85.5) against 0.169 / 0.824 / 0.834 (78.3 / 111.5 / 112.8): before, the new
constraints were evicted as soon as the cache was full. UD English EWT written 4 times in 32 MB of
cache: 0.073 (unbounded: 0.017). On a9a's first 2,000 rows (C 1, two passes,
OPT 702.3) the certificate is better, the model worse at the tightest limits: 300 / 500 / 700
constraints 0.359 / 0.151 / 0.030 (primal 972.9 / 780.0 / 710.3) against 0.665 / 0.382 / 0.103
(788.4 / 734.8 / 711.8): frozen alphas of early examples against a w trained on the first
examples' support vectors only.

Evicted support vectors come back (`Folded`). A frozen alpha cannot be revised, so a bound far below
what the support vectors need used to cost the gap that more passes close: the conll2000 sample
(data/, 100 sentences, 500-row windows, 150 constraints) certified 0.22 / 0.216 after 1 / 3
passes. An evicted support vector now keeps what rebuilds it without its rows: the task's code when
it has one (`Task.evicted_codes`: the sequence task keeps the labelling's mistakes, 8 bytes a
mistaken token, where its terms take about 50), else its terms with each row named by its place in
its example (13 to 21 bytes a term). A user task's constraint (svmtrain.tasks.user) is one row
beyond the data, its joint-feature difference, kept whole: the code that would rebuild it is the
offending label, any Python object, which a resume state could hold only by pickling it (a state
never runs code when loaded) and without which a resumed run would not be the run it continues.
When its example is read again (the next pass, or the
window's next sweep), the constraint is rebuilt over the example's rows (`Task.constraints_from_codes`, the same
terms bit for bit) and returns to the cache with its alpha: w0 gives back what it put there,
fold_margin its alpha l, the example's evicted mass its alpha, and the next re-optimisation may
revise it. w, D and UB's meaning do not move. Under a byte bound, what is kept counts against the
bound and takes at most half of it (the oldest beyond are frozen for good, as all were before); a
bound in constraints is the engine's size, and what is kept is not counted in it. What the last
pass keeps is in the resume state: a run continued with more passes (--warm-start) revises it
too; without a resume state to write, the last pass freezes what it evicts from earlier windows
instead (`keep_evicted`: see The window bound). (Freezing it at the end of each window of the last
pass gave UD x4 in 32 MB 0.0608 after one pass at 205.3 MB against 0.0638 at 202.2 MB.) Certified gaps after
1 / 3 (/ 6) passes, kept against frozen:
    - UD English EWT written 4 times, C 0.1, --cache-limit 32MB: 0.0638 / 3.01e-3 (peak RSS
      202 / 213 MB) against 0.0729 / 0.0642 (190 / 210 MB); unbounded, one pass 0.017 at 246 MB.
      With the bound brought back at each window's end: 0.0632 / 2.88e-3 (199 / 210 MB, 265 s
      for three passes, idle machine); the file once under the same bound, which its cache does
      not reach, 8.8e-4 at 150 MB;
      What is kept peaked at 6.9 MB (94,301 constraints, in the second pass): the half share is
      a safeguard that did not bind there;
    - the conll2000 sample, 150 constraints: 0.223 / 0.0341 / 0.0143 against 0.22 / 0.216 / 0.217;
    - pendigits' sample, multiclass, windows of 200, 120 constraints: 0.295 / 0.0518 against
      0.336 / 0.306; a9a's sample, binary, 300 constraints: 0.239 / 0.0308 against 0.597 / 0.355.

Features are not known in advance when streaming: the weight vector widens when a chunk brings a new
column (each class block gets zeros for the new features; terms that reach past the blocks, e.g. the
sequence task's transitions, move with them). Labels are: a labelled task (binary, multiclass,
sequence) takes them from --labels or from one reading pass over the file before training.

Resume state (`save_state` / `load_state`): an .npz with mode = 'online-dual', holding the cache, its
row store, alpha, w, the bounds, the position in the file (pass, rows done) and the options that
define the problem; `train --warm-start STATE` continues from it exactly (a run cut at a chunk
boundary resumes bit for bit; one cut inside a re-optimisation resumes from that feasible alpha).
"""

import time
from typing import Optional

import numpy as np

from svmtrain import data, interrupt, objective
from svmtrain._linear import term_dots
from svmtrain.engine import ConstraintCache, relative_gap, solve
from svmtrain.memory import trim_heap
from svmtrain.records import record
from svmtrain.solvers.online_reading import (RowDigest, _balanced_windows, _checked,
                                             _example_starts, _one_window, _rechunk,
                                             _take_examples, _window_parts, _windows)
from svmtrain.solvers.online_state import STATE_VERSION, StateError
from svmtrain.solvers.online_store import (COMPACT_PIECE, FOLD_BANDS, FOLD_PIECE, REL_UNKNOWN, Cache,
                                           Folded, RowStore, SparseW0, _kept_bytes,
                                           _places, inserted_zeros)
from svmtrain.tasks.base import Constraints, Geometry

DEFAULT_CHUNK = 1000
# chosen by measurement (bench/README.md, section online): see the module docstring
DEFAULT_SHUFFLE_WINDOW = 100000
DEFAULT_KEEP_INACTIVE = 200
DEFAULT_WINDOW_LOOKS = 3
DEFAULT_ADMIT_MARGIN = 0.3
DEFAULT_WINDOW_ROWS = 250000
DEFAULT_STRUCTURED_LOOKS = 100
STRUCTURED_INNER_EPOCHS = 10
STRUCTURED_MIN_CHUNKS = 6
EVICT_TO = 0.9                 # a byte bound, once passed, is evicted down to this share of it
TRIM_WINDOW_NNZ = 1 << 20       # non-zeros of a window after which the heap is trimmed


# ---------------------------------------------------------------------------------------------
# The solver


@record
class ChunkRecord:
    """One trace line: after a chunk (and its re-optimisation, if one ran)."""

    pass_: int
    examples: int              # examples seen in all passes so far
    cache: int                 # constraints cached
    lower: float               # LB = D(alpha), a true lower bound on OPT
    upper: float               # UB of the cached problem (not a bound on the whole problem)
    seconds: float
    solves: int
    epochs: int
    nbytes: int                # bytes of the cache's arrays and row store, and of the evicted
                               # support vectors kept to come back (Folded)


@record
class OnlineResult:
    w: np.ndarray
    dual: float                # LB = D(alpha)
    upper: float               # the cached problem's P (a true P(w) only when `certified`)
    geometry: Geometry
    examples: int              # examples in the file (the last complete pass), or seen so far
    passes: int                # passes completed
    epochs: int
    solves: int
    cache: int
    seconds: float
    certified: bool            # upper is the whole problem's P(w): a pass added nothing
    interrupted: bool = False
    cache_peak_bytes: int = 0  # the most the cache held: constraints and their rows, not the data
                               # (and what evicted support vectors kept, Folded)
    evicted: int = 0           # support vectors the cache limit evicted, over the passes
    returned: int = 0          # ... and brought back with their example (Folded)
    state_of: Optional[object] = None   # the run's resume state, made when asked for: a copy of
                                        # the cache held through the certificate pass was the peak
                                        # of a UD English EWT run (20 MB over the training's)

    @property
    def state(self):
        """The resume state as arrays (see save_state), of the solver as it stands now."""
        return {} if self.state_of is None else self.state_of()


@record
class OnlineOptions:
    C: float
    bias: Optional[float]
    epsilon: float
    seed: int
    passes: int = 1
    chunk: int = DEFAULT_CHUNK
    keep_rounds: Optional[int] = None          # None: the task's online_keep_inactive, else
                                               # DEFAULT_KEEP_INACTIVE
    cache_limit: Optional[int] = None          # constraints
    cache_limit_bytes: Optional[int] = None
    window_bound: bool = False                 # without a limit: at most what the largest window's
                                               # constraints needed (see The window bound)
    max_epochs: int = 1000
    shrinking: bool = True
    zero_based: bool = False
    checkpoint_every: Optional[float] = None   # seconds
    block_bytes: int = data.STREAM_BLOCK      # (a block is held while a window is looked at:
                                              # the block its next window starts in)
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW  # examples per shuffled window (0: file order)
    window_looks: Optional[int] = None         # sweeps of a window after its first visit, at most
                                               # (None: DEFAULT_WINDOW_LOOKS, or
                                               # DEFAULT_STRUCTURED_LOOKS for a structured task)
    window_rows: int = DEFAULT_WINDOW_ROWS      # rows per shuffled window, at most
    inner_epochs: Optional[int] = None          # epochs of a re-optimisation inside a pass, at most
                                                # (None: STRUCTURED_INNER_EPOCHS for a structured
                                                # task, max_epochs otherwise)
    admit_margin: float = DEFAULT_ADMIT_MARGIN  # cache examples violated within this of their slack
    keep_evicted: bool = True                   # the last pass keeps the support vectors it
                                                # evicts from earlier windows, for a run that
                                                # continues it (else frozen: see The window bound)


class OnlineDual:
    """One training run's state; `run` streams the passes."""

    def __init__(self, task, path, opt: OnlineOptions, state=None):
        self.task, self.path, self.opt = task, path, opt
        self.geometry = Geometry(0, opt.bias)
        self._geometry_changed()
        self.w = np.zeros(task.n_weights(self.geometry))
        self.cache = Cache.empty()
        self.LB = self.UB = 0.0
        # support vectors evicted by the cache limit, kept in w (see Memory in the module docstring):
        # w0 = their sum alpha x, fold_margin = their sum alpha l, and per example (sorted global
        # ids) the alpha mass they took from its budget C_i; w0 is None until the first eviction
        self.w0 = None
        self.fold_margin = 0.0
        self.folded_ids = np.zeros(0, np.int64)
        self.folded_mass = np.zeros(0)
        self.folded = Folded()          # ... and their terms, until their example comes back
        self.frozen_ids = np.zeros(0, np.int64)     # examples with evicted alpha that does not
                                        # come back (terms whose rows were not known: REL_UNKNOWN)
        self.pass_ = 0                  # current pass (0-based)
        self.rows_done = 0              # rows of the file finished in the current pass
        self.examples_done = 0          # positional ids handed out in the current pass
        self.window_done = 0            # examples of the current shuffle window visited, over its
                                        # sweeps (the window starts at rows_done / examples_done)
        self.window_added = 0           # constraints added in the window's current sweep
        self.window_examples = 0        # examples of the current window (its positional ids
                                        # follow examples_done)
        self.window_raise = 0.0         # what the window's current sweep added to UB
        self.structured = structured(task)
        self.controlled = hasattr(task, "task")     # svmtrain.controls: rows may be transformed
        self.row_of = None              # window row -> row store row (-1: not stored), see _chunks
        self.resume_window_row = None   # a restored store row's row in the window it was saved in
        self.chunk_rows = None          # the window rows of the chunk being explored
        self.looks = (opt.window_looks if opt.window_looks is not None
                      else getattr(task, "online_looks", None) or (
                          DEFAULT_STRUCTURED_LOOKS if self.structured else DEFAULT_WINDOW_LOOKS))
        keep = getattr(task, "online_keep_inactive", None)
        self.keep_rounds = (opt.keep_rounds if opt.keep_rounds is not None
                            else keep if keep is not None else DEFAULT_KEEP_INACTIVE)
        # a window is done when a sweep raised UB by at most raise_share * epsilon * UB (ranking's
        # own share: see the module docstring)
        self.raise_share = float(getattr(task, "online_raise_share", 1.0))
        self.revisit = False            # the chunk is a window's second look (not counted again)
        self.raised_since_solve = 0.0   # UB raised by exploring since the last re-optimisation
        self.added_in_pass = 0          # constraints added in the current pass
        self.pass_solves = 0            # re-optimisations when the current pass began
        self.examples_in_file = None    # known once a pass has completed
        self.examples_seen = 0
        self.next_age = 0
        self.solves = self.epochs = 0
        self.cache_peak_bytes = 0       # the most the cache held (Cache.nbytes), for the summary
        self.evicted = self.returned = 0    # support vectors evicted, and brought back (Folded)
        # the window bound (opt.window_bound): bytes, set when the first window is let go; it
        # evicts once the store knows each row's row in its example (RowStore.positions), from
        # the second window of the first pass on (row_pos carries what the first window's rows
        # were to it)
        self.window_bound = None
        self.window_caps = None         # (examples, rows) a window holds at most (_chunks)
        self.row_pos = None
        self.qids_done = set()          # ranking: the queries met in this pass (a query is one
                                        # int per query: small next to the data)
        self.certified = False
        self.model_examples = 0         # examples as the primal counts them, in the current pass
                                        # (keyed tasks: a group once per chunk it appears in)
        self.store_cols = 0             # the task problem's column count and stride (set per chunk)
        self.stride = 1
        self.stream_grouping = _stream_grouping(task)
        self.row_digest = RowDigest()   # fingerprint of the rows done in the current pass
        self.digest = None
        if self._returns and self.cache.store.positions is None:
            self.cache.store.track_positions()
        if state is not None:
            try:
                self._restore(state)
            except ValueError as e:       # the engine's or term_dots' checks of the arrays
                raise StateError(f"inconsistent cache: {e}") from None

    # -- geometry ---------------------------------------------------------------------------------
    def _widen(self, n_cols):
        """Give w room for features up to n_cols (zeros for the new ones in every class block)."""
        old = self.geometry
        new = Geometry(n_cols, old.bias)
        blocks = self.task.n_weights(Geometry(old.n_cols + 1, old.bias)) - self.task.n_weights(old)
        tail = len(self.w) - blocks * old.width
        if blocks <= 1 or self.stride == blocks:
            # the solvers' w is feature-major (feature j of block k at j * blocks + k, the bias's
            # weights after the features', then the tail): the new features' weights are a run of
            # zeros after the old features'. One new vector beside the old: through the model's
            # layout (_widened), UD English EWT read in 4 windows built w four times more at each
            # window's start, 16 MB each (peak 159 MB against 87 MB between the windows)
            at, gap = blocks * old.n_cols, blocks * (new.n_cols - old.n_cols)
            if gap:                 # (a task whose w does not follow the columns: none)
                self.w = inserted_zeros(self.w, at, gap)
                if self.w0 is not None:
                    self.w0 = self.w0.widened(at, gap)
        else:
            w, self.w = self.w, None
            self.w = self._widened(w, old, new, blocks)
            if self.w0 is not None:
                w0, self.w0 = self.w0.dense(), None
                self.w0 = SparseW0.of(self._widened(w0, old, new, blocks))
        assert len(self.w) == self.task.n_weights(new) and tail >= 0
        # terms past the blocks (sequence transitions) move with the blocks' end
        t = self.cache.cons
        if len(t.term_offset):
            past = t.term_offset >= blocks * old.width
            t.term_offset = np.where(past, t.term_offset + blocks * (new.width - old.width), t.term_offset)
        f = self.folded
        if len(f.offset):
            past = f.offset >= blocks * old.width
            f.offset = np.where(past, f.offset + blocks * (new.width - old.width), f.offset)
        self.cache.sqnorm = np.full(t.size, np.nan)      # terms that overlapped may no longer
        self.geometry = new
        self._geometry_changed()

    def _widened(self, w, old, new, blocks):
        """w (laid out for the geometry `old`) with zeros for the new features in every block,
        through the model's layout: for a task whose solver layout is not feature-major."""
        if not w.any():
            # zeros in any layout (the first window's widening: sector's w, 46 MB, was built
            # three times over at the peak of a one-pass run)
            return np.zeros(self.task.n_weights(new))
        flat = np.asarray(self.task.model_weights(w, old), np.float64).ravel()
        del w
        head = flat[:blocks * old.width].reshape(blocks, old.width)
        widened = np.zeros(blocks * new.width + len(flat) - blocks * old.width)
        wide = widened[:blocks * new.width].reshape(blocks, new.width)
        wide[:, :old.n_cols] = head[:, :old.n_cols]
        wide[:, new.n_cols:] = head[:, old.n_cols:]        # the bias weight, if any
        widened[blocks * new.width:] = flat[blocks * old.width:]
        del flat, head, wide
        return self.task.solver_weights(widened)

    def _geometry_changed(self):
        """Tell a controlled task (svmtrain.controls) the geometry: its prior's layout follows it."""
        hook = getattr(self.task, "geometry_changed", None)
        if hook is not None:
            hook(self.geometry)

    # -- the passes -------------------------------------------------------------------------------
    def run(self, progress_for_pass=None, on_chunk=None, on_checkpoint=None):
        """Stream the remaining passes. `progress_for_pass(p)` returns a context manager yielding the
        reader's byte callback; `on_chunk(ChunkRecord)` traces; `on_checkpoint(result)` writes."""
        started = time.perf_counter()
        self.started = started
        last_checkpoint = started
        while self.pass_ < self.opt.passes and not self.certified:
            with (progress_for_pass(self.pass_) if progress_for_pass else _null_progress()) as bar:
                for chunk, ids in self._chunks(bar):
                    self._explore(chunk, ids)
                    if self._worth_optimising():
                        self._optimise(inner=True)
                    record = ChunkRecord(self.pass_ + 1, self.examples_seen, self.cache.size,
                                         self.LB, self.UB, time.perf_counter() - started,
                                         self.solves, self.epochs,
                                         self.cache.nbytes + self.folded.nbytes)
                    if on_chunk is not None:
                        on_chunk(record)
                    if interrupt.requested():
                        return self._result(interrupted=True)
                    if (self.opt.checkpoint_every is not None and on_checkpoint is not None
                            and time.perf_counter() - last_checkpoint >= self.opt.checkpoint_every):
                        on_checkpoint(self._result())
                        last_checkpoint = time.perf_counter()
            # end of a pass
            self.examples_in_file = self.model_examples
            if self.added_in_pass == 0 and self.solves == self.pass_solves and self.w0 is None:
                # nothing was added or re-optimised: w stayed put through the pass and every
                # example was checked against it, so the cached UB is the whole problem's P(w)
                # (not with evicted support vectors: UB is then the restricted problem's)
                self.certified = self.UB - self.LB <= self.opt.epsilon * self.UB
            self.pass_ += 1
            self.rows_done = self.examples_done = self.added_in_pass = self.model_examples = 0
            self.window_done = 0
            self.pass_solves = self.solves
            self.row_digest = RowDigest()
            self.qids_done = set()
            self.row_pos = None     # (the window bound starts in the first pass or not at all)
        # the final re-optimisation to the inner tolerance (not after a certifying pass: it would
        # move w away from the P(w) that pass measured)
        if not self.certified and self.cache.size and relative_gap(self.UB, self.LB) > self.opt.epsilon / 2:
            self._optimise()
        return self._result(interrupted=interrupt.requested(), final=True)

    @property
    def _keyed(self):
        return self.stream_grouping == "keyed"

    @property
    def _grouping(self):
        """How the stream's rows form examples: whole runs of a qid, or one row each."""
        return "consecutive" if self.stream_grouping in ("consecutive", "queries") else "row"

    @property
    def _returns(self):
        """Whether evicted support vectors are kept to come back with their example (Folded): a
        bounded cache whose examples are whole in one place of the file (not a keyed task's) and
        whose rows are the file's (not a controlled task's)."""
        bounded = self.opt.cache_limit is not None or self.opt.cache_limit_bytes is not None
        return bounded and not self._keyed and not self.controlled

    @property
    def shuffles(self):
        """Whether the examples are visited in shuffled windows."""
        return self.opt.shuffle_window > 0

    def _chunks(self, progress):
        """(chunk, positional ids or None) of whole examples of the current pass, after the rows
        already done; the position in the file (rows_done, examples_done, window_done and the
        digest) is advanced before a chunk is handed out, so a state saved after it is exact."""
        # a task that reads its own file (a user task: svmtrain.tasks.user) holds the examples
        # of the blocks it hands out; it must keep them through a shuffle window and a chunk
        own = getattr(self.task, "iter_blocks", None)
        if own is not None:
            blocks = own(self.path, retain=self.opt.shuffle_window + self.opt.chunk)
        else:
            blocks = data.stream(self.path, zero_based=self.opt.zero_based,
                                 block_bytes=self.opt.block_bytes, progress=progress)
        if self.window_caps is None:        # (once a run: the file's head is read for it)
            self.window_caps = (self.opt.shuffle_window, self.opt.window_rows)
            if self.shuffles and own is None:
                *self.window_caps, _n_windows = _balanced_windows(self.path, self._grouping,
                                                                  *self.window_caps)
        window_caps = self.window_caps
        prepare = getattr(self.task, "prepare_pass", None)    # the training controls' data path
        if prepare is not None:
            blocks = prepare(blocks)
        blocks = self._skip_done(blocks)
        grouping = self._grouping
        # refused at its line as it is read (before a column is stored as int32 or widens w)
        # a sentence whose qid came before in the pass is refused wherever it is (as the
        # in-memory modes refuse it; a resumed pass checks from where it resumes, 8 bytes a
        # sentence); a query, by _check_queries, which knows the queries of a resumed pass
        whole = data.whole_examples(blocks, grouping, self.path,
                                    refuse_repeats=self.stream_grouping != "queries")
        examples = _checked(whole, self.path, self.opt.zero_based)
        if not self.shuffles:
            for chunk in _rechunk(examples, grouping, self.opt.chunk):
                self.row_digest.add(chunk)
                self.rows_done += chunk.n_rows
                yield chunk, None
            return
        # shuffled windows: read `shuffle_window` examples, visit them in a random order fixed by
        # (seed, pass, window start); the window's place in the file is the resume point
        # Before a window is let go, its examples are looked at again against the current w (they
        # are in memory: the file is still read once): sweeps of the window until one adds no
        # constraint, at most `window_looks` of them. window_done counts the examples of all sweeps.
        pinned = not self.controlled     # a controlled task's problem rows are not the window's
        if pinned:
            # the window's rows are the row store's while it is looked at: held once, and a
            # constraint on one of them costs no copy (UD English EWT in one window: the store
            # held 2.6 of its 3.1 million non-zeros a second time at the peak); its parts come
            # compact (int32 columns, the reader's blocks let go) and go into the store as they
            # are cut (conll2000: the reader's blocks and the joined window, 32 bytes a non-zero,
            # were the peak of a one-pass run; see RowStore.pin)
            parts = _window_parts(examples, grouping, *window_caps,
                                  compact_values=self.task.compact_values)
            windows = iter(lambda: self.cache.store.pin(_one_window(parts),
                                                        before=self._window_arrives), None)
        else:
            windows = _windows(examples, grouping, *window_caps)
        for window in windows:
            if pinned:
                if window.n_features > self.geometry.n_cols:    # every stored column is in w
                    self._widen(window.n_features)
                self.store_cols = max(self.store_cols, self.geometry.n_cols, 1)
                store = self.cache.store
                window_arrays = store.compactions
                self.row_of = store.pinned[0] + np.arange(window.n_rows, dtype=np.int64)
                self._share_restored_rows()
            else:
                self.row_of = None
            starts = _example_starts(window, grouping)
            n = len(starts) - 1
            if pinned:
                self.cache.store.place_window(starts)
            if self.stream_grouping == "queries":      # a query met once in the pass
                window_qids = self._check_queries(window)
            rng = np.random.default_rng([self.opt.seed, self.pass_, self.rows_done])
            order = rng.permutation(n)
            self.window_examples = n
            # a structured task's sweep is cut into STRUCTURED_MIN_CHUNKS chunks at least: w moves
            # inside a sweep (see the module docstring)
            size = (min(self.opt.chunk, -(-n // STRUCTURED_MIN_CHUNKS)) if self.structured
                    else self.opt.chunk)
            chunk = None
            while True:
                sweep, at = divmod(self.window_done, n)
                if sweep > 0 and at == 0 and self._window_done(sweep):
                    break                 # the window is done: the resume point moves on
                if at == 0:
                    self.window_added = 0
                    self.window_raise = 0.0
                take = order[at:at + size]
                self.window_done += len(take)
                self.revisit = sweep > 0
                store = self.cache.store
                if pinned and store.compactions != window_arrays:
                    # compacted (rows moved down): a block over the old arrays would hold them
                    window, window_arrays = store.pinned_block(window), store.compactions
                self.chunk_rows, chunk = _take_examples(window, starts, take)
                yield chunk, self.examples_done + take
            if pinned and self.cache.store.compactions != window_arrays:
                window = self.cache.store.pinned_block(window)    # (the rows moved)
            self.row_digest.add(window)
            if self.stream_grouping == "queries":
                self.qids_done |= window_qids
            self.rows_done += window.n_rows
            self.examples_done += n
            self.window_done = self.window_added = self.window_examples = 0
            self.window_raise = 0.0
            self.revisit = False
            self.row_of = self.chunk_rows = None
            large = window.nnz >= TRIM_WINDOW_NNZ
            del window, chunk               # not held while the next window is read
            if self.cache.store.pinned is not None:     # the rows no constraint uses go
                c = self.cache
                if self._window_bounds and c.store.positions is None and self.pass_ == 0:
                    self.row_pos = _row_positions(c.store, starts)
                held = c.nbytes + self.folded.nbytes        # its rows not counted yet
                c.store.unpin()
                bounded = self.opt.cache_limit_bytes is not None
                if bounded:
                    # the window's rows still in use count against the bound from now on: evict
                    # down to it before the next window is read, not after its first chunk (UD
                    # written 4 times in 32 MB: the let-go window's rows, nearly all in use, were
                    # held beside the next window at the peak)
                    self._enforce_limit()
                c.cons.term_row = c.store.compact(c.cons.term_row, force=bounded)
                if self._window_bounds:
                    self._bound_by_window(self.examples_done - n, n, held)
                if self.row_pos is not None and c.store.moved is not None:
                    self.row_pos = _moved(self.row_pos, c.store.moved)
                c.store.moved = None
            # the window's arrays (below the mmap threshold: from the heap) leave holes that the
            # next window's sizes do not fill; given back (UD written 4 times under --cache-limit
            # 32MB: 189 MB against 198; bench/README.md). A trim costs 0.3 ms: small windows skip it
            if large:
                trim_heap()

    def _share_restored_rows(self):
        """A resumed run's cached terms on rows of the window the state was saved in move to the
        pinned window's rows, as in the run that was not stopped (a multiclass example whose
        constraints share one row is solved as such)."""
        window_row, self.resume_window_row = self.resume_window_row, None
        if window_row is None or not np.any(window_row >= 0):
            return
        c = self.cache
        term_row = c.cons.term_row.copy()
        restored = term_row < len(window_row)
        restored[restored] = window_row[term_row[restored]] >= 0
        moved = c.store.pinned[0] + window_row[term_row[restored]]
        c.store.release(term_row[restored])
        c.store.hold(moved)
        term_row[restored] = moved
        c.cons.term_row = term_row

    def _window_done(self, sweep):
        """Whether a window is let go after `sweep` sweeps: the looks are spent, or the last sweep
        added nothing, or (structured tasks) it raised UB by at most epsilon UB, a sweep that
        would not have asked for a re-optimisation (Alg. 2's test, over the whole sweep)."""
        if self.structured and self.raised_since_solve > 0 and self.UB - self.LB > self.opt.epsilon * self.UB:
            # what the sweep's last chunks raised is re-optimised before the window is judged
            self._optimise(inner=True)
        if sweep > self.looks or self.window_added == 0:
            return True
        if not self.structured or self.window_raise > self.raise_share * self.opt.epsilon * self.UB:
            return False
        if self.UB - self.LB <= self.opt.epsilon * self.UB:
            return True
        # the sweep's w came from capped re-optimisations: solve the cache, then one more sweep
        # tells whether the window is still covered at the w of the solved cache
        self._optimise()
        return False

    def _skip_done(self, blocks):
        """The blocks after the rows already done in this pass (a resumed run), which must be the
        rows the state was saved on (their fingerprint is checked)."""
        if not self.rows_done:
            yield from blocks
            return
        n, digest = self.rows_done, RowDigest()
        for block in blocks:
            if n:
                head = block.rows(0, min(n, block.n_rows))
                digest.add(head)
                n -= head.n_rows
                if n == 0 and digest.value != self.digest:
                    raise data.DataError(self.path, None, "not the data the resume state was saved on "
                                                          f"(its first {self.rows_done} rows differ)")
                if head.n_rows == block.n_rows:
                    continue
                block = block.rows(head.n_rows, block.n_rows)
            yield block
            del block               # (not held while the next block is read)
        if n:
            raise data.DataError(self.path, None, f"has fewer rows than the {self.rows_done} the "
                                                  "resume state was saved after")

    def _explore(self, chunk, ids=None):
        """Alg. 2 lines 4-10 for every example of the chunk; `ids`: the examples' positions in the
        file (None: the chunk is the next in file order). The cache limit is enforced once, after
        the chunk's evicted support vectors came back and its new constraints came in."""
        self._admit(chunk, ids)
        self._enforce_limit()

    def _admit(self, chunk, ids):
        task, opt = self.task, self.opt
        if self.stream_grouping == "queries" and ids is None:    # (shuffled: when its window is read)
            self.qids_done |= self._check_queries(chunk)
        if max(chunk.n_features, 1) > self.geometry.n_cols:
            # at least one column: then every class block has a width, and a term's offset tells
            # a block (offset < blocks * width) from what follows them (see _widen)
            self._widen(max(chunk.n_features, 1))
        problem = task.problem(chunk, self.path, opt.C, self.geometry)
        self.store_cols, self.stride = problem.n_cols, problem.stride
        counted = 0 if self.revisit else len(task.costs(chunk, 1.0))
        self.model_examples += counted
        self.examples_seen += counted
        # the examples' costs: ranking's examples are queries (one slack each, see Ranking), its
        # problem.C are per pair
        C_of = problem.C if problem.C_example is None else problem.C_example
        n_examples = len(C_of)
        if self._keyed:
            ids_of = np.asarray(task.example_keys(chunk, self.path), np.int64)
        elif ids is not None:
            if len(ids) != n_examples:
                raise AssertionError("a shuffled chunk's examples and the task's differ in number")
            ids_of = np.asarray(ids, np.int64)
        else:
            ids_of = self.examples_done + np.arange(n_examples, dtype=np.int64)
        if ids is None:
            self.examples_done += n_examples
        starts = None
        if self.folded.size:
            starts = _example_starts(chunk, self._grouping)
            self._unfold(problem, chunk, ids_of, C_of, starts, ids is not None)
        try:
            _, cand = task.worst_offenders(self.w, problem, chunk)
        except NotImplementedError:       # a task without an oracle lists its constraints
            cand = task.all_constraints(problem, chunk)
        if not cand.size:
            return
        g = cand.margin - _dots(problem, cand, self.w, self.geometry)
        # each example's worst offender among its candidates (first on ties)
        order = np.lexsort((np.arange(cand.size), -g, cand.group))
        first = np.ones(len(order), bool)
        first[1:] = cand.group[order[1:]] != cand.group[order[:-1]]
        best = np.sort(order[first])
        g_best = g[best]
        local = cand.group[best]
        C_best = C_of[local]
        gid = ids_of[local]
        # the slack each example already pays in the cache (0 when it has no constraint there)
        xi = np.zeros(len(best))
        ids, _, C_group, xi_group = self.cache.groups() if self.cache.size else (np.zeros(0, np.int64),) * 4
        if len(ids):
            pos = np.minimum(np.searchsorted(ids, gid), len(ids) - 1)
            found = ids[pos] == gid
            xi[found] = xi_group[pos[found]]
            if self._keyed and np.any(found & (C_group[pos] != C_best)):
                i = int(np.flatnonzero(found & (C_group[pos] != C_best))[0])
                raise data.DataError(self.path, _line_of(cand, best[i], chunk),
                                     f"cost {C_best[i] / opt.C:g} differs from the cost "
                                     f"{C_group[pos[i]] / opt.C:g} of an earlier line of its slack group")
        # admitted: violated beyond the cached slack, or within admit_margin of it (an example
        # that w is about to violate joins with alpha = 0; its UB share is the positive part); a
        # worst offender with l = 0 (multiclass: the true class) is no constraint to come near
        tol = 1e-12 * np.maximum(1.0, np.abs(g_best))
        add = ((g_best > xi + tol) | ((g_best > xi - opt.admit_margin + tol) & (cand.margin[best] > 0))) \
            & (C_best > 0)
        if len(ids) and np.any(add & found):
            add &= _not_cached(self.cache.cons, gid, cand.key[best], add & found)
        if not np.any(add):
            return
        pick = best[add]
        raised = float(np.dot(C_best[add], np.maximum(g_best[add] - xi[add], 0.0)))
        self.UB += raised
        self.window_raise += raised
        self.raised_since_solve += raised
        new = cand.select(np.isin(np.arange(cand.size), pick))
        c = self.cache
        rows, inverse = np.unique(new.term_row, return_inverse=True)
        stored = self._store_rows(problem, chunk, rows, ids is not None)
        if c.store.positions is not None:
            if starts is None:
                starts = _example_starts(chunk, self._grouping)
            c.store.set_positions(stored, _rows_in_examples(rows, starts, chunk.n_rows))
        new.term_row = stored[inverse].astype(_row_index(c.store.n_rows))
        self.cache.store.hold(new.term_row)
        new.group = gid[add]
        m = new.size
        c.cons.extend(new)
        c.C = np.concatenate([c.C, C_best[add]])
        c.alpha = np.concatenate([c.alpha, np.zeros(m)])
        c.grad = np.concatenate([c.grad, g_best[add]])
        c.age = np.concatenate([c.age, self.next_age + np.arange(m, dtype=np.int64)])
        c.idle = np.concatenate([c.idle, np.zeros(m, np.int64)])
        c.sqnorm = np.concatenate([c.sqnorm, np.full(m, np.nan)])
        self.next_age += m
        self.added_in_pass += m
        self.window_added += m

    def _store_rows(self, problem, chunk, rows, in_window):
        """Row store ids for the problem rows `rows` of the chunk: a window's row stored by an
        earlier sweep is shared, not copied again (a window looked at 12 times would otherwise
        hold up to 12 copies of a sentence's rows)."""
        store = self.cache.store
        self._follow_store()
        if not in_window or self.row_of is None or self.chunk_rows is None:
            return store.add(problem.indptr, problem.indices, problem.data, rows)
        stored = np.empty(len(rows), np.int64)
        inside = rows < chunk.n_rows           # not a task's extra rows (sequence transitions)
        if np.any(~inside):
            stored[~inside] = store.add(problem.indptr, problem.indices, problem.data, rows[~inside])
        window_rows = self.chunk_rows[rows[inside]]
        have = self.row_of[window_rows]
        fresh = have < 0
        if np.any(fresh):
            have[fresh] = store.add(problem.indptr, problem.indices, problem.data, rows[inside][fresh])
            self.row_of[window_rows[fresh]] = have[fresh]
        stored[inside] = have
        return stored

    def _follow_store(self):
        """Renumber the window's row map after the store was compacted."""
        store = self.cache.store
        if store.moved is not None:
            if self.row_of is not None:
                self.row_of = np.where(self.row_of >= 0, store.moved[np.maximum(self.row_of, 0)], -1)
            store.moved = None

    def _check_queries(self, chunk):
        """Ranking streams query by query: a query's lines must be together in the file. Returns
        the chunk's queries (the caller adds them to qids_done: a window's once it is done, so that
        a state saved inside it resumes with the window's own queries not yet met)."""
        starts = np.concatenate(([0], np.flatnonzero(chunk.qid[1:] != chunk.qid[:-1]) + 1))
        seen = set()
        for s in starts.tolist():
            q = int(chunk.qid[s])
            if q < 0:       # (before its query's next line would be taken for a repeat)
                raise data.DataError(self.path, int(chunk.line[s]), "the ranking task needs qid:N "
                                                                    "on every line")
            if q in self.qids_done or q in seen:
                raise data.DataError(self.path, int(chunk.line[s]),
                                     f"qid {q} appears again after other queries: the online-dual "
                                     "mode streams a query at a time, so its lines must be together")
            seen.add(q)
        return seen

    def _engine_cache(self, restricted=True, w_buffer=None):
        """The cache as the engine's problem. After an eviction kept support vectors in w0, the
        engine solves for v = w - w0 over the cached alphas (`restricted`): margins l_c - w0.x_c
        and budgets C_i less the evicted mass (see Memory in the module docstring). `w_buffer`:
        the w the caller hands to the engine, which overwrites it; w0 is spread out there for the
        margins instead of in a vector of its own (sector multiclass: 46 MB beside w)."""
        c = self.cache
        ids, inv, C_group, _ = c.groups()
        margin = c.cons.margin
        if self.w0 is not None and restricted:
            margin = margin - self._store_dots(self.w0.dense(w_buffer))
            C_group = self._budgets(ids, C_group)
        return ConstraintCache(
            indptr=c.store.indptr, indices=c.store.indices, data=c.store.data, n_cols=self.store_cols,
            tptr=c.cons.tptr, term_row=c.cons.term_row, term_scale=c.cons.term_scale,
            term_offset=c.cons.term_offset, term_bias=c.cons.term_bias, margin=margin,
            group=inv, C_group=C_group, n_w=len(self.w), bias=self.geometry.bias,
            stride=self.stride, nonneg=self._nonneg(), sqnorm=c.sqnorm)

    def _budgets(self, ids, C_group):
        """C per group (sorted global ids) less the alpha mass its evicted support vectors keep."""
        if not len(self.folded_ids):
            return C_group
        pos = np.minimum(np.searchsorted(self.folded_ids, ids), len(self.folded_ids) - 1)
        folded = np.where(self.folded_ids[pos] == ids, self.folded_mass[pos], 0.0)
        return np.maximum(C_group - folded, 0.0)

    def _nonneg(self):
        """The non-negativity mask of a controlled task (--nonneg), in the current layout."""
        layout = getattr(self.task, "layout", None)
        return None if layout is None else layout(self.geometry)[2]

    def _optimise(self, inner=False):
        """Alg. 2 lines 11-13: re-optimise the cache, hot-started, then prune. `inner`: a
        re-optimisation inside a pass of a structured task, capped at STRUCTURED_INNER_EPOCHS."""
        c = self.cache
        if not c.size:
            return
        epochs = self.opt.max_epochs
        if inner:
            cap = self.opt.inner_epochs if self.opt.inner_epochs is not None else (
                STRUCTURED_INNER_EPOCHS if self.structured else self.opt.max_epochs)
            epochs = min(epochs, cap)
        if self.structured:
            # the pages the last re-optimisation's engine and the chunks since freed inside the
            # heap go back to the system before the next engine is built (UD English EWT, one
            # pass: once 141 -> 133 MB, written 4 times 155 -> 150 MB; the CPU within noise)
            trim_heap()
        sol = solve(self._engine_cache(w_buffer=self.w), epsilon=self.opt.epsilon / 2,
                    max_epochs=epochs, seed=self.opt.seed + self.solves, alpha=c.alpha,
                    shrinking=self.opt.shrinking, rounds=True,
                    w_buffer=self.w)          # replaced by the solution's w
        self.solves += 1
        self.epochs += sol.epochs
        if self.w0 is not None:
            self.w0.add_to(sol.w)     # the engine's v = w - w0 (its gradients are those at w)
        self.w, c.alpha, c.sqnorm = sol.w, sol.alpha, sol.sqnorm
        self._refresh(gradients=sol.gradients)
        self.raised_since_solve = 0.0
        c.idle = np.where(c.alpha > 0, 0, c.idle + 1)
        stale = self._stale()
        if np.any(stale):
            c.keep(~stale)               # w and the kept constraints' gradients stay
            self._refresh(dual=False, gradients=c.grad)

    def _stale(self):
        """The cached constraints to prune: idle for more than keep_rounds re-optimisations. A
        task's own (shorter) period applies to the current window's examples, which the window's
        next sweep looks at again (a pruned constraint still violated comes back); an earlier
        window's are not looked at again in the pass, so they keep the default period (UD written
        4 times, one pass: pruning every sequence constraint after 2 idle re-optimisations
        certified 2.6e-2 at a peak RSS of 418 MB; keeping an earlier window's 200, 1.7e-2 at 517
        MB)."""
        c = self.cache
        if self.opt.keep_rounds is not None or self.keep_rounds >= DEFAULT_KEEP_INACTIVE or self._keyed:
            return c.idle > self.keep_rounds
        lo = self.examples_done
        in_window = (c.cons.group >= lo) & (c.cons.group < lo + self.window_examples)
        return c.idle > np.where(in_window, self.keep_rounds, DEFAULT_KEEP_INACTIVE)

    def _worth_optimising(self):
        """After a chunk: Alg. 2's test (the cached gap exceeds epsilon UB). A structured task's
        later sweeps of a window re-optimise only at the sweep's end (_window_done): each is then
        a cutting-plane round over the window (see the module docstring)."""
        if self.structured and self.revisit:
            return False
        return self.UB - self.LB > self.opt.epsilon * self.UB

    def _refresh(self, dual=True, gradients=None):
        """Gradients (unless known: `gradients`), UB (cached problem) and, after w moved,
        LB = D(alpha) at the current w."""
        c = self.cache
        c.grad = c.cons.margin - self._store_dots() if gradients is None else gradients
        ww = float(np.dot(self.w, self.w))
        if dual:
            self.LB = self.fold_margin + objective.dual(self.w, c.cons.margin, c.alpha)
        self.UB = 0.5 * ww
        if c.size:
            ids, _, C_group, xi = c.groups()
            self.UB += float(np.dot(self._budgets(ids, C_group), xi))
        if self.w0 is not None:
            # the primal of the problem the engine solves (the evicted alphas fixed):
            # 1/2 |w|^2 - w.w0 + sum_evicted alpha l + sum_i (C_i - evicted mass_i) xi_i
            self.UB += self.fold_margin - self.w0.dot(self.w)

    def _enforce_limit(self, protect=None):
        """Evict down to the cache limit (_evict). Under a byte bound the evicted support vectors'
        terms (Folded) count against it too, and take at most half of it: beyond that the oldest
        are frozen for good, as they all were before they were kept (their alphas stay in w0 and
        their examples' evicted mass, but do not come back). A bound on the number of
        constraints is the engine's size; the fold is not in the engine, and is not bounded so.
        Under the window bound, the examples `protect` (first global id, count; default: the
        window being looked at) are not evicted: only earlier windows' constraints are."""
        f, bound = self.folded, self.opt.cache_limit_bytes
        window = None
        if self._window_bounding:
            bound = self.window_bound
            window = protect or (self.examples_done, self.window_examples)
        if bound is None:
            self._evict(None)
        else:
            for _ in range(8):      # an eviction adds to the fold: a few rounds at most
                spared = None if window is None else self._of_examples(*window)
                if not self._evict(bound - f.nbytes, spared):
                    break           # nothing left that may go (the window's own)
                if f.nbytes > bound // 2:
                    self._freeze_oldest(bound // 2)
                if self.cache.nbytes + f.nbytes <= bound:
                    break
        self.cache_peak_bytes = max(self.cache_peak_bytes, self.cache.nbytes + f.nbytes)

    def _of_examples(self, first, n):
        """Which cached constraints are of the examples first .. first + n - 1 (global ids)."""
        group = self.cache.cons.group
        return (group >= first) & (group < first + n)

    @property
    def _window_bounds(self):
        """Whether the window bound applies: no limit was set, and evicted support vectors can
        come back (examples whole in one place of the file, rows the file's) and fold into w0."""
        opt = self.opt
        return (opt.window_bound and opt.cache_limit is None and opt.cache_limit_bytes is None
                and self.shuffles and not self._keyed and not self.controlled
                and self._nonneg() is None)

    @property
    def _window_bounding(self):
        """Whether the window bound evicts now: set, and each store row's row in its example
        known (RowStore.positions: from the second window of the first pass on)."""
        return (self.window_bound is not None and self.cache.store.positions is not None
                and self._window_bounds)

    def _bound_by_window(self, first, n, held):
        """A window (examples first.., n of them) was let go, its rows in use now counted: the
        bound becomes what the cache held (`held`, its rows not counted) if this window's own
        constraints needed more than the bound, and earlier windows' constraints are evicted down
        to it (this window's wait for the next: _window_arrives)."""
        self.window_bound = held if self.window_bound is None else max(self.window_bound, held)
        if self._window_bounding:
            self._enforce_limit(protect=(first, n))

    def _window_arrives(self):
        """The next window's first part is read, its rows not stored yet: the bound evicts from
        now on (the first window's rows' places kept), and the cache, the let-go window's
        constraints with it, is brought within the bound before the new rows are stored: the
        eviction's folds and copies are not held beside them."""
        store = self.cache.store
        if self.row_pos is not None:
            if self.pass_ == 0 and self.rows_done > 0 and store.positions is None:
                store.track_positions(self.row_pos)     # a file of several windows
            self.row_pos = None
        if self._window_bounding and self.resume_window_row is None:
            # (a resumed run's first window is the one its state was saved in, whose arrival
            # the run it continues saw before)
            self._enforce_limit()       # (no window is being looked at: none is spared)
            store.moved = None          # (no row map refers to the rows yet)

    def _freeze_oldest(self, max_bytes):
        """Drop the oldest kept terms of evicted support vectors until the fold holds at most
        max_bytes."""
        f = self.folded
        each = f.constraint_bytes()
        fixed = max(f.nbytes - int(each.sum()), 0)       # what no one constraint holds
        tail = np.cumsum(each[::-1])[::-1]                 # bytes of constraints k.. on
        keep_from = min(max(int(np.searchsorted(-tail, -(max_bytes - fixed))), 1), f.size)
        old = np.zeros(f.size, bool)
        old[:keep_from] = True
        self._freeze(old)

    def _freeze(self, mask):
        """The kept evicted support vectors where mask is True do not come back: their terms go,
        their alphas stay in w0 and their examples' evicted mass."""
        frozen = self.folded.take(mask)
        self.frozen_ids = np.union1d(self.frozen_ids, frozen.group)

    def _evict(self, budget, keep=None):
        """Evict down to the cache limit (`budget`: the bytes left to the cache): idle constraints,
        then support vectors (folded into w0), then constraints not yet re-optimised, each oldest
        first; never those where `keep` is True. Returns whether anything was evicted."""
        c, opt = self.cache, self.opt
        over_count = opt.cache_limit is not None and c.size > opt.cache_limit
        held = None if budget is None else c.nbytes
        over_bytes = held is not None and held > budget
        if held is not None and not over_bytes and held + c.store.dead_bytes() > budget:
            # the rows no term uses do not count against the bound, but are not held beyond it
            c.cons.term_row = c.store.compact(c.cons.term_row, force=True)
        if not (over_count or over_bytes):
            return False
        # idle zeros first, then support vectors (kept in w0), then the constraints not
        # yet re-optimised: each oldest first (a new constraint evicted before its first solve
        # would never be tried)
        movable = np.arange(c.size) if keep is None else np.flatnonzero(~keep)
        if not len(movable):
            return False
        fixed = np.zeros(0, np.int64) if keep is None else np.flatnonzero(keep)
        fresh = (c.alpha[movable] == 0) & (c.idle[movable] == 0)
        order = movable[np.lexsort((c.age[movable], (c.alpha[movable] > 0) + 2 * fresh))]
        m = n = len(movable)
        if opt.cache_limit is not None:
            n = min(n, opt.cache_limit)
        if budget is not None:
            # the bytes of keeping the last n in eviction order, their rows compacted: n shrinks
            # by 10% steps until they fit in EVICT_TO of the budget
            while n > 0 and _kept_bytes(c, np.concatenate([fixed, order[m - n:]])) > EVICT_TO * budget:
                n = int(n * 0.9)
        if keep is not None and n == m:
            return False
        evict = np.zeros(c.size, bool)
        evict[order[:m - n]] = True
        support = evict & (c.alpha > 0)
        fold = bool(np.any(support)) and self._nonneg() is None and not self.controlled
        if fold:
            # an example's support vectors leave the cache together, so that none of its alpha
            # stays in the cache above its reduced budget
            evict |= np.isin(c.cons.group, np.unique(c.cons.group[support]))
            support = evict & (c.alpha > 0)
            # w stays; w0 takes what the evicted support vectors put in it: the alphas are those
            # of before, a feasible point, so LB stays a true lower bound and the model does not
            # move
            # FOLD_PIECE constraints of the cache at a time, over its own terms (views), the
            # others weighted 0 (which the fold skips): the window bound evicts a window's support
            # vectors at once, and their terms copied whole were 20 MB of UD written 4 times'
            # heap peak; the whole cache in one fold lists its entries at once (10 MB more)
            weight = np.where(support, c.alpha, 0.0)
            for first in range(0, c.size, FOLD_PIECE):
                stop = min(first + FOLD_PIECE, c.size)
                if np.any(support[first:stop]):
                    self._fold_into_w0(weight[first:stop], c.cons.range(first, stop))
            del weight
            self._fold_ids(c.cons.group[support], c.alpha[support])
            self.fold_margin += float(np.dot(c.alpha[support], c.cons.margin[support]))
            pos = c.store.positions
            if pos is not None:
                # a constraint restored without its terms' rows in their example (saved by a run
                # without a bound) stays frozen
                frozen = np.zeros(c.size, bool)
                if np.any(pos == REL_UNKNOWN):
                    unknown = pos[c.cons.term_row] == REL_UNKNOWN
                    frozen[np.repeat(np.arange(c.size), np.diff(c.cons.tptr))[unknown]] = True
                frozen &= support
                if not opt.keep_evicted and self.pass_ == opt.passes - 1 and not self._keyed:
                    frozen |= support & (c.cons.group < self.examples_done)
                self.folded.add(c, support & ~frozen, c.alpha,
                                getattr(self.task, "evicted_codes", None))
                if np.any(frozen):
                    self.frozen_ids = np.union1d(self.frozen_ids, c.cons.group[frozen])
        support_lost = bool(np.any(support))
        self.evicted += int(np.count_nonzero(support))
        c.keep(~evict)
        if opt.cache_limit_bytes is not None or keep is not None:
            c.cons.term_row = c.store.compact(c.cons.term_row, force=True)
        if fold:
            # w and the alphas did not move: the kept constraints' gradients stand, and LB too
            # (what fold_margin gained the cache's sum alpha l lost); UB follows the budgets
            self._refresh(dual=False, gradients=c.grad)
        elif support_lost:
            # w = sum alpha x over what is left (a feasible alpha: LB stays a true lower bound)
            engine = self._engine_cache(w_buffer=self.w).engine(c.alpha, shrinking=False,
                                                                 w_buffer=self.w)
            self.w = engine.final_w()
            self._refresh()
        else:
            self._refresh(dual=False)
        return True

    def _unfold(self, problem, chunk, ids_of, C_of, starts, in_window):
        """The evicted support vectors of the chunk's examples (global ids `ids_of`; `starts`: the
        rows where they start in the chunk) back into the cache with their alphas: what they put
        in w leaves w0, their alpha l fold_margin, their alpha their example's evicted mass. The
        alphas do not change, so neither do w and LB; the next re-optimisation may revise them."""
        f = self.folded
        back = np.isin(f.group, ids_of)
        if not np.any(back):
            return
        ret = f.take(back)
        order = np.argsort(ids_of, kind="stable")
        local = order[np.searchsorted(ids_of, ret.group, sorter=order)]
        parts = []
        store = self.cache.store
        is_coded = ret.coded.copy()
        if np.any(is_coded):                 # rebuilt by the task, over the problem's rows
            coded = ret.take(is_coded)
            built = self.task.constraints_from_codes(problem, chunk, local[is_coded], coded.cptr,
                                                     coded.codes)
            rows, inverse = np.unique(built.term_row, return_inverse=True)
            stored = self._store_rows(problem, chunk, rows, in_window)
            store.set_positions(stored, _rows_in_examples(rows, starts, chunk.n_rows))
            built.term_row = stored[inverse]
            built.group, built.margin = coded.group, coded.margin
            parts.append((built, coded.alpha, local[is_coded]))
            local = local[~is_coded]
        if ret.size:                         # kept as terms over the example's rows
            term_local = np.repeat(local, np.diff(ret.tptr))
            inside = ret.rel >= 0
            if np.any(ret.rel[inside] >= (starts[term_local + 1] - starts[term_local])[inside]):
                raise data.DataError(self.path, None, "an example has fewer rows than when it was "
                                                      "read before: the file changed during training")
            stored = np.empty(len(ret.rel), np.int64)
            if np.any(inside):
                rows, inverse = np.unique(starts[term_local[inside]] + ret.rel[inside],
                                          return_inverse=True)
                unique = self._store_rows(problem, chunk, rows, in_window)
                store.set_positions(unique, _rows_in_examples(rows, starts, chunk.n_rows))
                stored[inside] = unique[inverse]
            if not np.all(inside):       # (rows beyond the data: -1 in the store, as added)
                rows, inverse = np.unique(-1 - ret.rel[~inside].astype(np.int64), return_inverse=True)
                stored[~inside] = store.add(*ret.extra, rows)[inverse]
            parts.append((Constraints(ret.tptr, stored, ret.scale, ret.offset, ret.bias, ret.margin,
                                      ret.group, ret.key), ret.alpha, local))
        c = self.cache
        new = Constraints.concat([p for p, _, _ in parts])
        new.term_row = new.term_row.astype(_row_index(c.store.n_rows))     # (as _admit's)
        alpha = np.concatenate([a for _, a, _ in parts])
        local = np.concatenate([l for _, _, l in parts])
        c.store.hold(new.term_row)
        self._fold_into_w0(-alpha, new)
        m = new.size
        self.returned += m
        c.cons.extend(new)
        c.C = np.concatenate([c.C, C_of[local]])
        c.alpha = np.concatenate([c.alpha, alpha])
        c.grad = np.concatenate([c.grad, new.margin - self._store_dots(cons=new)])
        c.age = np.concatenate([c.age, self.next_age + np.arange(m, dtype=np.int64)])
        c.idle = np.concatenate([c.idle, np.zeros(m, np.int64)])
        c.sqnorm = np.concatenate([c.sqnorm, np.full(m, np.nan)])
        self.next_age += m
        self.fold_margin -= float(np.dot(alpha, new.margin))
        pos = np.searchsorted(self.folded_ids, new.group)
        np.subtract.at(self.folded_mass, pos, alpha)
        gone = (np.isin(self.folded_ids, new.group) & ~np.isin(self.folded_ids, f.group)
                & ~np.isin(self.folded_ids, self.frozen_ids))
        self.folded_ids, self.folded_mass = self.folded_ids[~gone], self.folded_mass[~gone]
        if not len(self.folded_ids):
            # nothing is evicted any more: the problem is the cache's own again
            self.w0, self.fold_margin = None, 0.0
        # UB moves (the budgets, w0 and fold_margin did), LB does not: the alphas are the same
        self._refresh(dual=False, gradients=c.grad)

    def _fold_into_w0(self, weight, cons=None):
        """w0 += sum_c weight_c x_c over the cache (or `cons`, over the cache's rows); no engine,
        which would hold a w and a scratch vector of its own (SparseW0 says how)."""
        from svmtrain._oneslack import accumulate_plane, plane_entries
        c, bias = self.cache, self.geometry.bias
        cons = c.cons if cons is None else cons
        if self.w0 is None:
            self.w0 = SparseW0(len(self.w))
        fold = (c.store.indptr, c.store.indices, c.store.data, self.store_cols, cons.tptr,
                cons.term_row, cons.term_scale, _offsets(cons.term_offset), cons.term_bias, weight,
                0.0 if bias is None else float(bias), bias is not None, self.stride)
        if self.w0.full is None:
            entries = _fold_entries(c.store.indptr, cons, weight)
            if FOLD_BANDS * entries <= len(self.w):
                self.w0.add(*plane_entries(*fold, len(self.w)))
                return
        n_w = len(self.w)
        # every entry marked as touched already: accumulate_plane then lists none of them, and
        # the list it needs room for is never written (np.empty: its pages are never touched)
        self.w0.add_dense_bands(
            lambda band, lo, checked: accumulate_plane(*fold, band, np.ones(len(band), np.uint8),
                                                       np.empty(len(band), np.int64), lo=lo,
                                                       n_w=n_w, checked=checked),
            FOLD_BANDS)

    def _fold_ids(self, groups, alpha):
        """Add the evicted alphas to their examples' evicted mass."""
        ids = np.concatenate([self.folded_ids, groups.astype(np.int64)])
        mass = np.concatenate([self.folded_mass, alpha])
        self.folded_ids, where = np.unique(ids, return_inverse=True)
        self.folded_mass = np.bincount(where, weights=mass, minlength=len(self.folded_ids))

    # -- results and resume state ----------------------------------------------------------------
    def _result(self, interrupted=False, final=False):
        """The result as it stands; `final`: the run is over, and w is handed over, not copied
        (sector multiclass: a 46 MB copy at the end of the run)."""
        examples = (self.examples_in_file if self.examples_in_file is not None
                    else self.model_examples)
        return OnlineResult(w=self.w if final else self.w.copy(), dual=self.LB, upper=self.UB, geometry=self.geometry,
                            examples=int(examples), passes=self.pass_, epochs=self.epochs,
                            solves=self.solves, cache=self.cache.size,
                            seconds=time.perf_counter() - self.started, certified=self.certified,
                            interrupted=interrupted, state_of=self.state,
                            cache_peak_bytes=self.cache_peak_bytes, evicted=self.evicted,
                            returned=self.returned)

    def release(self):
        """Let the cache go once the run is over and no resume state will be asked for (the
        model is built and written after training; sector multiclass held its cache through it),
        and with it what evicted support vectors keep to come back and put in w0 (UD English EWT
        written 4 times: 7 MB held through the certificate's pass, which needs w alone)."""
        self.cache = self.folded = self.w0 = None
        self.folded_ids = self.folded_mass = self.frozen_ids = None

    def state(self):
        """The resume state as arrays (see save_state)."""
        c = self.cache
        if c is None:
            raise RuntimeError("the cache was released: no resume state after release()")
        t = c.cons
        store, term_row, window_row = c.store.saved(t.term_row)
        return {
            "mode": np.array("online-dual"), "version": np.array(STATE_VERSION),
            "n_cols": np.array(self.geometry.n_cols), "w": self.w,
            "store_cols": np.array(self.store_cols), "stride": np.array(self.stride),
            "model_examples": np.array(self.model_examples), "pass_solves": np.array(self.pass_solves),
            "digest": np.array(self.row_digest.value, np.int64),
            "LB": np.array(self.LB), "UB": np.array(self.UB),
            "pass": np.array(self.pass_), "rows_done": np.array(self.rows_done),
            "examples_done": np.array(self.examples_done), "added_in_pass": np.array(self.added_in_pass),
            "window_done": np.array(self.window_done), "window_added": np.array(self.window_added),
            "window_raise": np.array(self.window_raise),
            "raised_since_solve": np.array(self.raised_since_solve),
            "window_rows": np.array(self.opt.window_rows if self.shuffles else 0),
            "revisit": np.array(self.revisit),
            "shuffle_window": np.array(self.opt.shuffle_window if self.shuffles else 0),
            "examples_in_file": np.array(-1 if self.examples_in_file is None else self.examples_in_file),
            "examples_seen": np.array(self.examples_seen), "next_age": np.array(self.next_age),
            "solves": np.array(self.solves), "epochs": np.array(self.epochs),
            "evicted": np.array(self.evicted), "returned": np.array(self.returned),
            "certified": np.array(self.certified),
            "w0": np.zeros(0) if self.w0 is None else self.w0.dense(),
            "fold_margin": np.array(self.fold_margin),
            "folded_ids": self.folded_ids, "folded_mass": self.folded_mass,
            "frozen_ids": self.frozen_ids,
            "term_rel": (np.zeros(0, np.int32) if c.store.positions is None
                         else c.store.positions[c.cons.term_row]),
            "rel_kept": np.array(c.store.positions is not None),
            "window_bound": np.array(-1 if self.window_bound is None else self.window_bound),
            "fold_group": self.folded.group, "fold_key": self.folded.key,
            "fold_coded": self.folded.coded, "fold_cptr": self.folded.cptr,
            "fold_codes": self.folded.codes,
            "fold_alpha": self.folded.alpha, "fold_l": self.folded.margin,
            "fold_tptr": self.folded.tptr, "fold_rel": self.folded.rel,
            "fold_scale": self.folded.scale, "fold_offset": np.asarray(self.folded.offset, np.int64),
            "fold_bias": self.folded.bias, "fold_extra_indptr": self.folded.extra[0],
            "fold_extra_indices": self.folded.extra[1], "fold_extra_data": self.folded.extra[2],
            "qids_done": np.array(sorted(self.qids_done), np.int64),
            "tptr": t.tptr, "term_row": term_row, "term_scale": t.term_scale,
            # (offsets in the run's own type: a byte bound counts them, so a resumed run must too)
            "term_offset": t.term_offset, "term_bias": np.asarray(t.term_bias, bool),
            "margin": t.margin, "group": t.group, "key": t.key, "C": c.C, "alpha": c.alpha,
            "age": c.age, "idle": c.idle, "grad": c.grad, "sqnorm": c.sqnorm,
            "store_indptr": store[0], "store_indices": store[1], "store_data": store[2],
            "store_refs": store[3], "store_window_row": window_row,
        }

    def _restore(self, s):
        self.geometry = Geometry(int(s["n_cols"]), self.opt.bias)
        self._geometry_changed()
        if len(s["w"]) != self.task.n_weights(self.geometry):
            raise StateError(f"w has {len(s['w'])} weights, the task needs "
                             f"{self.task.n_weights(self.geometry)}")
        self.w = np.array(s["w"], np.float64)
        self.w0 = SparseW0.of(np.asarray(s["w0"], np.float64)) if len(s["w0"]) else None
        self.fold_margin = float(s["fold_margin"])
        self.folded_ids = np.array(s["folded_ids"], np.int64)
        self.folded_mass = np.array(s["folded_mass"], np.float64)
        self.frozen_ids = np.array(s["frozen_ids"], np.int64)
        f = self.folded
        f.group, f.key = np.array(s["fold_group"], np.int64), np.array(s["fold_key"], np.int64)
        f.alpha, f.margin = np.array(s["fold_alpha"], np.float64), np.array(s["fold_l"], np.float64)
        f.coded = np.array(s["fold_coded"], bool)
        f.cptr, f.codes = np.array(s["fold_cptr"], np.int64), np.array(s["fold_codes"], np.int64)
        f.tptr, f.rel = np.array(s["fold_tptr"], np.int64), np.array(s["fold_rel"], np.int32)
        f.scale, f.bias = np.array(s["fold_scale"]), np.array(s["fold_bias"], bool)
        f.offset = np.array(s["fold_offset"], np.int64)
        f.extra = (np.array(s["fold_extra_indptr"], np.int64),
                   np.array(s["fold_extra_indices"], np.int32), np.array(s["fold_extra_data"]))
        self.LB, self.UB = float(s["LB"]), float(s["UB"])
        self.pass_, self.rows_done = int(s["pass"]), int(s["rows_done"])
        self.examples_done, self.added_in_pass = int(s["examples_done"]), int(s["added_in_pass"])
        self.window_done, self.window_added = int(s["window_done"]), int(s["window_added"])
        self.window_raise = float(s["window_raise"])
        self.raised_since_solve = float(s["raised_since_solve"])
        saved_rows = int(s["window_rows"])
        if saved_rows != (self.opt.window_rows if self.shuffles else 0) and (
                self.rows_done or self.window_done):
            raise StateError(f"it was saved with windows of at most {saved_rows} rows, this run has "
                             f"{self.opt.window_rows}: the order of the pass it stopped in would "
                             f"change")
        self.revisit = bool(s["revisit"])
        saved_window = int(s["shuffle_window"])
        if saved_window != (self.opt.shuffle_window if self.shuffles else 0) and (
                self.rows_done or self.window_done):
            raise StateError(f"it was saved with --shuffle-window {saved_window}, this run has "
                             f"{self.opt.shuffle_window}: the order of the pass it stopped in "
                             f"would change")
        e = int(s["examples_in_file"])
        self.examples_in_file = None if e < 0 else e
        self.examples_seen, self.next_age = int(s["examples_seen"]), int(s["next_age"])
        self.solves, self.epochs = int(s["solves"]), int(s["epochs"])
        self.evicted, self.returned = int(s["evicted"]), int(s["returned"])
        self.certified = bool(s["certified"])
        self.store_cols, self.stride = int(s["store_cols"]), int(s["stride"])
        self.model_examples = int(s["model_examples"])
        self.pass_solves = int(s["pass_solves"])
        self.qids_done = set(s["qids_done"].tolist())
        store = RowStore(s["store_indptr"], s["store_indices"], s["store_data"], s["store_refs"])
        # (the run it continues held its rows as _admit stores them: a byte bound counts them)
        cons = Constraints(s["tptr"], s["term_row"].astype(_row_index(store.n_rows)),
                           s["term_scale"], s["term_offset"], s["term_bias"], s["margin"],
                           s["group"], s["key"])
        self.resume_window_row = np.asarray(s["store_window_row"], np.int64)
        self.cache = Cache(cons, s["C"], s["alpha"], np.zeros(cons.size), s["age"], s["idle"], store)
        bound = int(s.get("window_bound", -1))
        self.window_bound = None if bound < 0 or not self._window_bounds else bound
        rel_kept = bool(s.get("rel_kept", False))
        if self._returns or (rel_kept and self._window_bounds):
            # each row's place from its terms' (REL_UNKNOWN: saved by a run without a bound)
            rel = s["term_rel"]
            pos = np.full(store.n_rows, REL_UNKNOWN, np.int32)
            if len(rel) == len(cons.term_row):
                pos[cons.term_row] = rel
                if np.any(pos[cons.term_row] != rel):
                    raise StateError("terms of one row are at different rows of their example")
            store.track_positions(pos)
        # the gradients as the run had them: under evicted support vectors the engine's are
        # (l - w0.x) - v.x, which a fresh l - w.x need not equal in the last bit
        grad = s.get("grad")
        self.cache.grad = (np.array(grad, np.float64) if grad is not None and len(grad) == cons.size
                           else cons.margin - self._store_dots())
        # ... and the norms the engines computed (an engine computes a norm its own way: one
        # computed afresh for the resumed run moved a bounded multiclass run's model)
        sqnorm = s.get("sqnorm")
        if sqnorm is not None and len(sqnorm) == cons.size:
            self.cache.sqnorm = np.array(sqnorm, np.float64)
        self.digest = int(s["digest"])
        if self.cache.size:
            self._engine_cache().engine(self.cache.alpha)    # the engine's own checks, once

    def _store_dots(self, w=None, cons=None):
        """w . x_c for the cached constraints (or `cons`, over the cache's rows), over the row
        store (w: the current w)."""
        c = self.cache
        cons = c.cons if cons is None else cons
        if not cons.size:
            return np.zeros(0)
        s, bias = c.store, self.geometry.bias
        return term_dots(s.indptr, s.indices, s.data, self.store_cols, cons.tptr, cons.term_row,
                         cons.term_scale, _offsets(cons.term_offset),
                         cons.term_bias, self.w if w is None else w,
                         0.0 if bias is None else float(bias), bias is not None, self.stride)


def train_online(task, path, opt: OnlineOptions, state=None):
    """The solver registered as "online-dual": a run over the file at `path` (resumed from a
    state checked by load_state, when given); `.run(...)` streams it and returns an OnlineResult."""
    return OnlineDual(task, path, opt, state)


train_online.streams = True


# ---------------------------------------------------------------------------------------------
# Helpers


def structured(task):
    """Whether an example has many constraints, found one at a time by the oracle (multiclass,
    sequence; a task says so with `online_structured`): a look at it again under a later w finds
    a new one, where a binary example can only give back its single constraint."""
    inner = getattr(task, "task", task)           # a controlled task (svmtrain.controls) wraps one
    flag = getattr(inner, "online_structured", None)
    if flag is not None:
        return bool(flag)
    from svmtrain.tasks.base import LabelledTask
    return isinstance(inner, LabelledTask)


def _stream_grouping(task):
    """How the file is cut for streaming: 'row', 'consecutive' (sentences), 'queries' (ranking:
    consecutive qid runs, each query met once) or 'keyed' (slack groups anywhere, named by a key)."""
    if task.keyed_examples:
        return "keyed"
    if task.grouping == "whole":
        return "queries"
    return task.grouping


def _fold_entries(indptr, cons, weight):
    """The entries of the rows of the constraints' terms where weight is not 0, counted
    COMPACT_PIECE constraints at a time (the store's row lengths listed whole were 1.6 MB beside
    the cache of UD English EWT, in a window's evictions)."""
    entries = 0
    for first in range(0, cons.size, COMPACT_PIECE):
        stop = min(first + COMPACT_PIECE, cons.size)
        tptr = cons.tptr[first:stop + 1]
        rows = cons.term_row[int(tptr[0]):int(tptr[-1])]
        lengths = (indptr[rows + 1] - indptr[rows])[np.repeat(weight[first:stop] != 0,
                                                               np.diff(tptr))]
        entries += int(lengths.sum())
    return entries


def _offsets(a):
    """Term offsets as the kernels read them in place: int32 or int64 (a sequence cache's int32
    offsets are not copied to int64 at every pass over the cache: 8 bytes a term)."""
    a = np.ascontiguousarray(a)
    return a if a.dtype in (np.int32, np.int64) else a.astype(np.int64)


def _dots(problem, cons, w, geometry):
    return term_dots(problem.indptr, problem.indices, problem.data, problem.n_cols, cons.tptr,
                     cons.term_row, cons.term_scale, _offsets(cons.term_offset), cons.term_bias, w,
                     0.0 if problem.bias is None else float(problem.bias), problem.bias is not None,
                     problem.stride)


def _not_cached(cons, gid, key, add):
    """False where (group, key) is in the cache already (a tie with the cached slack); only the
    candidates where `add` is True are looked up."""
    near = np.isin(cons.group, gid[add])
    have = set(zip(cons.group[near].tolist(), cons.key[near].tolist()))
    return np.array([not a or (g, k) not in have for g, k, a in zip(gid.tolist(), key.tolist(), add.tolist())],
                    dtype=bool)


def _line_of(cons, c, chunk):
    r = int(cons.term_row[cons.tptr[c]])
    return int(chunk.line[r]) if r < chunk.n_rows else None


def _row_index(n_rows):
    """The type of the cache's row numbers over a store of n_rows rows: int32 while they fit (the
    engine reads either in place). int64 took 8 of the 21 bytes of a sequence term, and as much
    again in each copy of the terms an eviction or a new chunk makes: UD English EWT one pass
    124-127 -> 118 MB, written 4 times 142-143 -> 138 MB (its window bound, in bytes, then holds
    fewer constraints: certified 0.0462 against 0.0443). The same models on one window (UD,
    conll2000: 135.7 -> 132.1 MB), in the same time."""
    return np.int32 if n_rows < 2**31 else np.int64


def _rows_in_examples(rows, starts, n_rows):
    """Each of a chunk's problem rows `rows` as the row of its example (the chunk's examples
    start at its rows `starts`), as int32; -1 for a row past the chunk's (the task's own, such as
    the sequence task's unit row)."""
    rows = np.asarray(rows, np.int64)
    inside = rows < n_rows
    first = starts[np.searchsorted(starts, np.where(inside, rows, 0), side="right") - 1]
    return np.where(inside, rows - first, -1).astype(np.int32)


def _row_positions(store, starts):
    """Each store row's row in its example (int32; -1 beyond the pinned window, whose examples
    start at its rows `starts`), so that a term's row in its example is row_pos[term_row]."""
    pos = np.full(store.n_rows, -1, np.int32)
    first, n = store.pinned
    pos[first:first + n] = _places(starts)
    return pos


def _moved(row_pos, moved):
    """row_pos over the store's rows after a compaction (`moved`: old row -> new, -1 gone)."""
    kept = moved >= 0
    out = np.full(int(moved.max()) + 1 if kept.any() else 0, -1, np.int32)
    out[moved[kept]] = row_pos[kept]
    return out


class _null_progress:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

