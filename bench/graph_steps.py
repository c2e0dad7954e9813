"""One LangGraph graph step's put, as a chat graph makes it (the checkpoint holds every message so far, one of
them new): the step bench/run.py --langgraph and bench/adapters_ab.py both time, on either saver."""


class GraphSteps:
    """STEP(saver, thread, k): the k-th step of THREAD on SAVER (each saver keeps its own thread state)."""

    def __init__(self):
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

        self._kinds = (HumanMessage, AIMessage)
        self._create, self._empty = create_checkpoint, empty_checkpoint
        self.state = {}

    def step(self, saver, thread, k):
        key = (id(saver), thread)
        config, checkpoint, messages = self.state.get(key) or (
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, self._empty(), [])
        messages = messages + [self._kinds[k % 2](content=f"message {k} " + "x" * 80, id=f"m-{thread}-{k}")]
        checkpoint = self._create(checkpoint, None, k)
        checkpoint["channel_values"] = {"messages": messages}
        config = saver.put(config, checkpoint, {"source": "loop", "step": k}, {})
        self.state[key] = (config, checkpoint, messages)
